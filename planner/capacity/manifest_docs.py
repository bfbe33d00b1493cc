"""The Kubernetes objects a launch plan's pods run under, per deployment target (planner.capacity.launch TARGETS):
plain dicts of one pod spec, its labels and counts, each shaped to its project's CRD at a pinned commit (the
copies tests/fixtures/crds check them against; tests/fixtures/crds/SOURCES.md).

    k8s     apps/v1 Deployment of `replicas` pods (one-node instances)
    lws     leaderworkerset.x-k8s.io/v1 LeaderWorkerSet: `replicas` groups of `size` pods (leader + workers),
            kubernetes-sigs/lws config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml
    kserve  serving.kserve.io/v1beta1 InferenceService: the predictor as a custom container (PredictorSpec
            inlines a PodSpec), minReplicas / maxReplicas,
            kserve/kserve config/crd/full/serving.kserve.io_inferenceservices.yaml
"""

from __future__ import annotations


def deployment(name: str, labels: dict, pod: dict, replicas: int) -> dict:
    """apps/v1 Deployment: `replicas` copies of the pod."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }


def leader_worker_set(
    name: str, labels: dict, leader: tuple[dict, dict], worker: dict, replicas: int, size: int
) -> dict:
    """LeaderWorkerSet: `replicas` groups of `size` pods; `leader` = (its extra labels, its pod)."""
    leader_labels, leader_pod = leader
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": size,
                "leaderTemplate": {"metadata": {"labels": leader_labels | labels}, "spec": leader_pod},
                "workerTemplate": {"metadata": {"labels": labels}, "spec": worker},
            },
        },
    }


def inference_service(name: str, labels: dict, pod: dict, min_replicas: int, max_replicas: int) -> dict:
    """KServe InferenceService whose predictor runs the engine's container (a custom predictor)."""
    predictor = {"minReplicas": min_replicas, "maxReplicas": max_replicas} | pod
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "labels": labels},
        "spec": {"predictor": predictor},
    }
