"""What a sandbox can be on this machine: `launch.Sandbox.setup()` finds it out here, once per run.

Each protection the grader asks for is tried, not assumed. The view needs bubblewrap, and a sandboxed Python
that starts in it. The identity is a dedicated uid where the grader is root, setpriv is installed and a
sandboxed Python really runs as that uid; failing that, a user namespace where one starts; failing that too,
the view is kept without either where it starts, else given up. The cgroups and the working copies' quota
are detected. What works is one record (`Support`), with why each missing protection is missing (the
protections report, protections.py, says it).

Threat model: a probe launches a trusted one-line Python exactly as a kernel of the asked-for sandbox would
be launched (`launch.Sandbox.wrap`: the same view, identity and limits), so a protection found to work is
one a kernel gets.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from . import workcopy
from .cgroups import CgroupSupport, detect

__all__ = ["Support", "find_out", "probe"]


@dataclass(frozen=True)
class Support:
    """What works here of a sandbox as asked for (the fields `launch.Sandbox.setup()` sets), and `why`:
    protection key -> why it is missing."""

    isolate: bool
    userns: bool
    dedicated: bool
    cgroups: CgroupSupport
    quota: bool
    why: dict[str, str]


def find_out(sb, base: Path) -> Support:
    """What works here of the sandbox `sb` (a `launch.Sandbox` as asked for), its working copies under `base`."""
    why: dict[str, str] = {}
    isolate, userns, dedicated = _view_and_identity(sb, base, why)
    cgroups = detect()
    for name in ("memory", "pids"):
        if getattr(cgroups, name) is None:
            why[f"{name}_cgroup"] = cgroups.why.get(name, "not available")
    owner = replace(sb, isolate=isolate, userns=userns, dedicated=dedicated).owner_ids()
    quota_why = workcopy.probe_quota(base, *owner)
    if quota_why:
        why["disk_quota"] = quota_why
    return Support(isolate, userns, dedicated, cgroups, not quota_why, why)


def _view_and_identity(sb, base: Path, why: dict[str, str]) -> tuple[bool, bool, bool]:
    """isolate, userns, dedicated: the view where bubblewrap is installed and starts, with the best identity."""
    isolate, userns, dedicated = sb.isolate, sb.userns, sb.dedicated
    if isolate and shutil.which("bwrap") is None:
        isolate = False
        why["allow_list_view"] = "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if isolate and userns:
        dedicated, userns = _identity(sb, base, why)
    if isolate and not userns:
        failed = probe(replace(sb, isolate=True, userns=False, dedicated=dedicated), base)
        if failed:
            isolate = False
            why["allow_list_view"] = failed
    elif not isolate and "allow_list_view" not in why:
        why["allow_list_view"] = "isolation was switched off (--no-isolation)"
    return isolate, userns, dedicated


def _identity(sb, base: Path, why: dict[str, str]) -> tuple[bool, bool]:
    """dedicated, userns: a dedicated uid where the grader is root and a kernel really runs as it; else a user
    namespace where a kernel starts in one; else neither (`why["dedicated_uid"]` says why)."""
    if os.geteuid() != 0:
        why_not = f"the grader is not root (uid {os.geteuid()}), so it cannot switch kernels to another user"
    elif shutil.which("setpriv") is None:
        why_not = "setpriv (util-linux) is not installed"
    else:
        why_not = probe(replace(sb, isolate=True, userns=True, dedicated=True), base) or ""
        if not why_not:
            return True, True
    why["dedicated_uid"] = why_not
    userns_why = probe(replace(sb, isolate=True, userns=True, dedicated=False), base)
    if userns_why:
        why["dedicated_uid"] = f"{why_not}; a user namespace does not work either ({userns_why})"
        return False, False
    return False, True


def probe(sb, base: Path) -> str | None:
    """None if a Python sandboxed as `sb` (a `launch.Sandbox`) starts here, else why not."""
    base.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="agr-probe-", dir=base))
    try:
        work = tmp / "w"
        work.mkdir()
        workcopy.make_workcopy(work, None, *sb.owner_ids())
        code = "import os; open('ok', 'w').write(str(os.getuid()))"
        launch = sb.wrap(work, [sb.python, "-c", code])
        try:
            proc = subprocess.run(
                launch.argv,
                capture_output=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
                pass_fds=launch.pass_fds,
                env=sb.env(work, work / "observe"),
                preexec_fn=sb.preexec(),
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"bwrap failed to run: {err}"
        finally:
            launch.close_fds()
        ok = work / "ok"
        if proc.returncode != 0 or not ok.exists():
            msg = proc.stderr.decode(errors="replace").strip().splitlines()
            return f"bwrap cannot create the sandbox here: {msg[-1] if msg else f'exit code {proc.returncode}'}"
        if sb.dedicated and ok.read_text() != str(sb.uid):
            return f"the kernel ran as uid {ok.read_text()!r}, not {sb.uid}"
        return None
    finally:
        workcopy.remove_tree(tmp)
