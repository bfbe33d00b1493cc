"""A web input never reads a server file: length specs on the Traffic and Techniques pages take
bundled traces by name or the session's own uploads; uploads live in a per-session folder removed with the session.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from planner.core.errors import InputError
from planner.traffic.trace_refs import save_upload, upload_name, web_length_spec, web_trace_ref

PASSWD = Path("/etc/passwd")
TRACE_CSV = b"arrival_s,prompt_tokens,output_tokens\n0,100,10\n1,300,30\n"


def _page_text(at: AppTest) -> str:
    kinds = ("error", "warning", "info", "caption", "markdown", "exception")
    parts = [str(e.value) for kind in kinds for e in at.get(kind)]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    return "\n".join(parts)


@pytest.mark.parametrize(
    "field_key, label", [("load_prompt_spec", "Prompt lengths"), ("load_output_spec", "Output lengths")]
)
def test_traffic_page_never_reads_etc_passwd(field_key, label):
    at = AppTest.from_file(str(ROOT / "app_pages" / "traffic.py"), default_timeout=60).run()
    at.selectbox(key="load_profile").set_value("custom").run()
    at.text_input(key=field_key).input("empirical:/etc/passwd").run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith(label) and "not a path" in errors[0]
    text = _page_text(at)
    if PASSWD.is_file():
        for line in PASSWD.read_text(errors="replace").splitlines()[:5]:
            assert line.strip() and line not in text  # not one line of the server file reaches the page
    assert not at.metric or "Completed" not in {m.label for m in at.metric}  # nothing simulated from it


def test_a_trace_shaped_server_file_is_refused_too(tmp_path):
    server_file = tmp_path / "server_trace.csv"  # a valid trace, but on the server, not uploaded by the user
    server_file.write_bytes(TRACE_CSV)
    for spec in (f"empirical:{server_file}", "empirical:../server_trace.csv", "empirical:~/x.csv", "empirical:"):
        with pytest.raises(InputError, match="not a path") as err:
            web_length_spec(spec, "Prompt lengths", tmp_path / "uploads")
        assert err.value.field == "Prompt lengths" and str(server_file.parent) not in err.value.message


def test_bundled_names_and_the_sessions_own_uploads_are_accepted(tmp_path):
    assert web_length_spec("empirical:azure_conv", "Prompt lengths", None) == "empirical:azure_conv"
    assert web_length_spec(" fixed:512 ", "Prompt lengths", None) == "fixed:512"
    saved = save_upload(tmp_path, "C:\\Users\\me\\my trace.csv", TRACE_CSV)  # a browser may send a full path
    assert saved.name == "my trace.csv" and saved.parent.parent == tmp_path
    assert web_length_spec("empirical:my trace.csv", "Prompt lengths", tmp_path) == f"empirical:{saved}"
    with pytest.raises(InputError, match="no uploaded trace named 'other.csv'"):
        web_trace_ref("other.csv", "Output lengths", tmp_path)
    with pytest.raises(InputError, match="not a path"):  # no upload folder: bundled names only
        web_trace_ref("my trace.csv", "Output lengths", None)


@pytest.mark.parametrize("name", ["trace\x00.csv", "a\nb.csv", "", "..", "x" * 121 + ".csv"])
def test_bad_upload_names_are_a_clean_error(name, tmp_path):
    with pytest.raises(InputError) as err:
        upload_name(name)
    assert err.value.field == "trace upload" and "\n" not in str(err.value)
    assert not any(tmp_path.iterdir())


def test_the_session_folder_goes_with_the_session():
    at = AppTest.from_file(str(ROOT / "app_pages" / "traffic.py"), default_timeout=60).run()
    at.selectbox(key="load_profile").set_value("custom").run()
    at.text_input(key="load_prompt_spec").input("empirical:nothing_uploaded.csv").run()
    assert "no uploaded trace named" in at.error[0].value
    folder = Path(at.session_state["_session_uploads"].name)
    assert folder.is_dir() and folder.name.startswith("servingplan_session_")
    del at  # the session's state is dropped: its TemporaryDirectory's finalizer removes the folder
    gc.collect()
    assert not folder.exists()
