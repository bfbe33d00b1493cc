"""servingplan's engine: pure Python capacity planning for serving open LLMs (no UI imports)."""
