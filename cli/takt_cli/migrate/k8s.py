"""Kubernetes CronJobs to job bodies, and jobs back to CronJobs.

The input is YAML: one or more documents (`---`), each a CronJob, or a `List` of them as
`kubectl get cronjobs -o yaml` prints it, or a JSON array of them as `takt -o json export k8s`
prints it; other kinds are passed over. The mapping:

| CronJob | takt |
|---|---|
| `spec.schedule` (`CRON_TZ=`/`TZ=` prefix too) | `schedule` (robfig.py); `@every 90s` `interval` |
| `spec.timeZone` (else the prefix, else UTC) | `time_zone` |
| `spec.suspend: true` | `status: paused` |
| `spec.concurrencyPolicy` Allow / Forbid / Replace | `overlap` allow / skip / replace |
| `spec.startingDeadlineSeconds` | `catchup: all` within `catchup_window` |
| `jobTemplate.spec.backoffLimit` (default 6) | `retry.max_attempts` = backoffLimit + 1 |
| `jobTemplate.spec.activeDeadlineSeconds` | `timeout_sec` |
| `metadata.name` (and namespace) | `name` (`namespace/name` outside `default`) |
| the pod's container, without `--target` | a `container` target (below) |
| the pod's container, with `--target` | the `payload` of the target given |
| (robfig/cron's clock changes) | `dst: {gap: skip, overlap: twice}` |

Kubernetes reads cron with robfig/cron v3, whose reading differs from takt's in which day fields
combine with AND (`0 6 */2 * 1` is odd days or Mondays there), in `N/step` of the day of week, and
in what it refuses; takt_cli/migrate/robfig.py reads the schedule as robfig does and writes it in
takt's dialect, or refuses it with the reason.

robfig/cron walks a fixed-time schedule hour by hour in real time, so a time that spring-forward
skips never comes (the day passes) and one that fall-back repeats comes twice; the job's `dst`
policy says the same, so it fires at the CronJob's instants across clock changes too (where the
clock moves by one hour: robfig.py says why a schedule with chosen hours is refused on a day it
moves by 30 minutes or two hours). tests/data/migrate/robfig holds robfig's own answers.

Without `--target` the pod's one container becomes the job's container target (an ECS task on
Fargate, takt.targets.container): its `image`; `command` and `args` together as the command (the
image's ENTRYPOINT still runs when only `args` is given, as Kubernetes runs it); `env` entries
with a `value`; and its resources (limits, else requests) rounded up to the smallest Fargate size
that holds them. What a Fargate task of takt's does not carry is named in a note, never dropped in
silence: `valueFrom`/`envFrom` (secrets and config maps), volumes and their mounts, init and
sidecar containers, `restartPolicy` (takt retries by attempts), `workingDir`, ports, probes, the
security context, the service account and pull secrets, and scheduling constraints. A pod with
several containers is refused: a container target runs one.
"""

from __future__ import annotations

import math
import re
from typing import Any

from takt.models.records import Dst, OverlapPolicy
from takt.models.targets import FARGATE_MEMORY, ContainerSpec, parse_target
from takt.schedule import ScheduleError, parse_duration, validate_time_zone
from takt_cli.migrate import robfig
from takt_cli.migrate.model import (
    Exported,
    Imported,
    MappingError,
    checked,
    source_key,
    uncarried,
)
from takt_cli.migrate.reading import yaml_documents

_ZONE_PREFIX = re.compile(r"^(?:CRON_TZ|TZ)=(?P<zone>\S+)\s+(?P<rest>.+)$")
_EVERY = re.compile(r"^@every\s+(?P<duration>\S+)$")
# The job's choices are the model's (mypy holds each to OverlapPolicy, pydantic to Dst).
_OVERLAP: dict[str, OverlapPolicy] = {"Allow": "allow", "Forbid": "skip", "Replace": "replace"}
_POLICY = {value: key for key, value in _OVERLAP.items()}
ROBFIG_DST = Dst(gap="skip", overlap="twice").model_dump()
DEFAULT_BACKOFF_LIMIT = 6
MAX_ATTEMPTS = 100
_DNS_LABEL = re.compile(r"[^a-z0-9-]+")


def load(text: str, target: str | None) -> list[Imported]:
    """Every CronJob in the YAML `text`, mapped to a job body for `target` (None: a container
    target of the pod's own container)."""

    documents = yaml_documents(text)
    manifests: list[Any] = []
    for document in documents:
        if isinstance(document, dict) and document.get("kind") == "List":
            manifests.extend(document.get("items") or [])
        elif isinstance(document, list):  # a JSON array, as `takt -o json export k8s` prints
            manifests.extend(document)
        else:
            manifests.append(document)
    found = [m for m in manifests if isinstance(m, dict) and m.get("kind") == "CronJob"]
    return [imported_manifest(manifest, index, target) for index, manifest in enumerate(found)]


def imported_manifest(manifest: dict[str, Any], index: int, target: str | None) -> Imported:
    metadata = manifest.get("metadata") or {}
    name = str(metadata.get("name") or f"cronjob-{index}")
    namespace = str(metadata.get("namespace") or "default")
    item = Imported(f"{namespace}/{name}", source_key("k8s", f"{namespace}/{name}"))
    try:
        item.body = _body(manifest, name, namespace, target, item.notes)
    except (ValueError, OverflowError) as exc:
        # A MappingError, or a value out of any range (a date past year 9999): this item is
        # refused, the rest of the file goes on.
        item.reason = str(exc)
        return item
    return checked(item)


def _body(
    manifest: dict[str, Any], name: str, namespace: str, target: str | None, notes: list[str]
) -> dict[str, Any]:
    spec = manifest.get("spec") or {}
    schedule = spec.get("schedule")
    if not isinstance(schedule, str) or not schedule.strip():
        raise MappingError("spec.schedule is missing")
    body: dict[str, Any] = {"name": name if namespace == "default" else f"{namespace}/{name}"}
    body.update(_schedule(schedule.strip(), spec.get("timeZone"), notes))
    if spec.get("suspend") is True:
        body["status"] = "paused"
    policy = spec.get("concurrencyPolicy") or "Allow"
    if policy not in _OVERLAP:
        raise MappingError(f"spec.concurrencyPolicy {policy!r} is not Allow, Forbid or Replace")
    body["overlap"] = _OVERLAP[policy]
    deadline = spec.get("startingDeadlineSeconds")
    if isinstance(deadline, int):
        body["catchup"] = "all"
        body["catchup_window"] = f"{max(deadline, 1)}s"
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    backoff = job_spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT)
    if isinstance(backoff, int):
        if backoff + 1 > MAX_ATTEMPTS:
            notes.append(f"backoffLimit {backoff} lowered to takt's {MAX_ATTEMPTS - 1} retries")
        body["retry"] = {"max_attempts": min(backoff + 1, MAX_ATTEMPTS)}
    active_deadline = job_spec.get("activeDeadlineSeconds")
    if isinstance(active_deadline, int):
        body["timeout_sec"] = active_deadline
    pod = (job_spec.get("template") or {}).get("spec") or {}
    containers = pod.get("containers") or []
    if not containers:
        raise MappingError("jobTemplate has no containers")
    if target is None:
        body["target"] = container_target(pod, notes)
        return body
    body["target"] = target
    body["payload"] = containers[0] if len(containers) == 1 else {"containers": containers}
    return body


# What a pod or its container may say that a container target of takt's does not carry.
_POD_UNCARRIED = (
    "volumes",
    "initContainers",
    "serviceAccountName",
    "imagePullSecrets",
    "nodeSelector",
    "affinity",
    "tolerations",
    "securityContext",
    "hostNetwork",
)
_CONTAINER_UNCARRIED = (
    "envFrom",
    "volumeMounts",
    "workingDir",
    "ports",
    "securityContext",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
)
_QUANTITY = re.compile(r"^(?P<number>\d+(?:\.\d+)?)(?P<unit>m|Ki|Mi|Gi|Ti|k|M|G|T)?$")
_MIB = {"Ki": 1 / 1024, "Mi": 1.0, "Gi": 1024.0, "Ti": 1024.0**2, "k": 1000 / 1024**2}
_MIB |= {"M": 1000**2 / 1024**2, "G": 1000**3 / 1024**2, "T": 1000**4 / 1024**2}


def container_target(pod: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The container target of a pod's one container (the mapping in the docstring above); what
    does not carry over is noted."""
    containers = pod.get("containers") or []
    if len(containers) != 1:
        raise MappingError(
            f"the pod has {len(containers)} containers: a container target runs one "
            "(give --target to import the containers as a payload)"
        )
    container = containers[0]
    if not isinstance(container, dict) or not container.get("image"):
        raise MappingError("the pod's container has no image")
    target: dict[str, Any] = {"type": "container", "image": str(container["image"])}
    command = [str(part) for part in (container.get("command") or [])]
    command += [str(part) for part in (container.get("args") or [])]
    if command:
        target["command"] = command
    if container.get("command"):
        notes.append(
            "container command replaces the image's ENTRYPOINT in Kubernetes; a container "
            "target sets the command (CMD), after the image's ENTRYPOINT if it has one"
        )
    environment = _environment(container.get("env") or [], notes)
    if environment:
        target["environment"] = environment
    target.update(_size(container.get("resources") or {}, notes))
    for key in _POD_UNCARRIED:
        if pod.get(key):
            notes.append(f"pod {key} not carried: a Fargate task of takt's has none")
    if pod.get("restartPolicy") not in (None, "Never"):
        notes.append(
            f"restartPolicy {pod['restartPolicy']} not carried: takt retries a failed attempt "
            "as retry.max_attempts says"
        )
    for key in _CONTAINER_UNCARRIED:
        if container.get(key):
            notes.append(f"container {key} not carried: a Fargate task of takt's has none")
    return target


def _environment(entries: list[Any], notes: list[str]) -> dict[str, str]:
    """The plain `value` entries; one read from a secret or a config map is noted, not carried."""
    environment: dict[str, str] = {}
    for entry in entries:
        if not isinstance(entry, dict) or "name" not in entry:
            continue
        if "valueFrom" in entry:
            notes.append(
                f"env {entry['name']} comes from valueFrom (a secret or config map): not carried"
            )
            continue
        environment[str(entry["name"])] = str(entry.get("value", ""))
    return environment


def _size(resources: dict[str, Any], notes: list[str]) -> dict[str, int]:
    """The smallest Fargate size holding the container's limits (else its requests)."""
    asked = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
    cpu = _quantity(asked.get("cpu"), "cpu") * 1024 if "cpu" in asked else 0.0
    memory = _quantity(asked.get("memory"), "memory") if "memory" in asked else 0.0
    for units, (low, high, step) in FARGATE_MEMORY.items():
        if units < cpu or high < memory:
            continue
        size = max(low, low + math.ceil(max(0.0, memory - low) / step) * step)
        if ("cpu" in asked and units != cpu) or ("memory" in asked and size != memory):
            notes.append(
                f"resources {asked} rounded up to Fargate's cpu {units} and memory {size} MiB"
            )
        return {"cpu": units, "memory": size}
    raise MappingError(f"resources {asked} exceed Fargate's largest task (16 vCPU, 120 GiB)")


def _quantity(value: Any, what: str) -> float:
    """A Kubernetes quantity: CPUs for `cpu` (`500m` is 0.5), MiB for `memory`."""
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        raise MappingError(f"resources {what} {value!r} is not a Kubernetes quantity")
    number, unit = float(match.group("number")), match.group("unit")
    if what == "cpu":
        return number / 1000 if unit == "m" else number
    if unit is None or unit == "m":
        return number / 1024**2 / (1000 if unit == "m" else 1)
    return number * _MIB[unit]


def _schedule(text: str, zone: Any, notes: list[str]) -> dict[str, Any]:
    prefixed = _ZONE_PREFIX.match(text)
    if prefixed is not None:
        if zone and zone != prefixed.group("zone"):
            raise MappingError(
                f"spec.timeZone {zone!r} and the schedule's {prefixed.group('zone')!r} disagree"
            )
        zone, text = prefixed.group("zone"), prefixed.group("rest").strip()
    if not zone:
        notes.append("no spec.timeZone: Kubernetes used its controller's zone; takt uses UTC")
    try:
        body: dict[str, Any] = {"time_zone": validate_time_zone(str(zone or "UTC"))}
    except ScheduleError as exc:
        raise MappingError(f"spec.timeZone: {exc}") from None
    every = _EVERY.match(text)
    if every is not None:
        try:
            parse_duration(every.group("duration"))
        except ValueError as exc:
            raise MappingError(f"{text!r}: {exc}") from None
        body["interval"] = every.group("duration")
        notes.append("an @every schedule counts from the import, not from the CronJob's creation")
        return body
    body["schedule"] = robfig.to_takt(text, body["time_zone"])
    body["dst"] = dict(ROBFIG_DST)
    return body


# What `_manifest` writes or notes itself; `uncarried` names any other setting a job has. The
# target is the container the payload describes.
CARRIED = frozenset(
    {"name", "schedule", "time_zone", "status", "overlap", "retry", "timeout_sec", "payload"}
    | {"target", "catchup", "catchup_window", "jitter", "dst", "idempotency_key"}
)


def export(job: dict[str, Any]) -> Exported:
    """A job (as the API shows it) whose payload is a container, as a CronJob manifest."""
    out = Exported(job["id"])
    try:
        out.item = _manifest(job, out.notes)
    except MappingError as exc:
        out.reason = str(exc)
    else:
        out.notes += uncarried(job, CARRIED)
    return out


def _manifest(job: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    if not job.get("schedule"):
        raise MappingError("a CronJob needs a cron schedule (not an interval or a one-off)")
    expr = robfig.from_takt(job["schedule"])
    try:
        robfig.check_zone(expr, job["time_zone"])
    except MappingError as exc:
        notes.append(f"Kubernetes would not fire it as takt does: {exc}")
    payload = job.get("payload")
    running = _running_container(job.get("target"))
    if running is not None:
        containers = [running]
    elif isinstance(payload, dict) and "image" in payload:
        containers = [payload]
    elif isinstance(payload, dict) and isinstance(payload.get("containers"), list):
        containers = payload["containers"]
    else:
        raise MappingError(
            "neither the target nor the payload is a container (an object with an image)"
        )
    if job.get("overlap") not in _POLICY:
        raise MappingError(f"overlap={job.get('overlap')} has no concurrencyPolicy")
    spec: dict[str, Any] = {
        "schedule": expr,
        "timeZone": job["time_zone"],
        "suspend": job["status"] == "paused",
        "concurrencyPolicy": _POLICY[job["overlap"]],
        "jobTemplate": {
            "spec": {
                "backoffLimit": int(job["retry"]["max_attempts"]) - 1,
                "activeDeadlineSeconds": int(job["timeout_sec"]),
                "template": {"spec": {"restartPolicy": "Never", "containers": containers}},
            }
        },
    }
    if job.get("catchup") == "all":
        spec["startingDeadlineSeconds"] = int(parse_duration(job["catchup_window"]).total_seconds())
    name, _, namespace = _names(job.get("name") or job["id"])
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    if job.get("jitter"):
        notes.append("jitter has no CronJob equivalent")
    if (job.get("dst") or ROBFIG_DST) != ROBFIG_DST:
        notes.append(
            "Kubernetes skips a time that spring-forward skips and runs a repeated time twice "
            f"(dst {ROBFIG_DST}), not as the job's dst {job['dst']}"
        )
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": metadata, "spec": spec}


def _running_container(target: Any) -> dict[str, Any] | None:
    """The pod container a container target runs as (its command as `args`: like a container
    target's command, they follow the image's ENTRYPOINT), or None for another target."""
    if not isinstance(target, str) or not target.startswith("{"):
        return None
    try:
        spec = parse_target(target)
    except ValueError:
        return None
    if not isinstance(spec, ContainerSpec):
        return None
    container: dict[str, Any] = {"name": "task", "image": spec.image}
    if spec.command:
        container["args"] = list(spec.command)
    if spec.environment:
        container["env"] = [{"name": name, "value": value} for name, value in spec.environment]
    container["resources"] = {
        "limits": {"cpu": f"{spec.cpu * 1000 // 1024}m", "memory": f"{spec.memory}Mi"}
    }
    return container


def _names(text: str) -> tuple[str, str, str]:
    namespace, slash, name = text.rpartition("/")
    label = _DNS_LABEL.sub("-", name.lower()).strip("-")[:52] or "takt-job"
    return label, slash, namespace
