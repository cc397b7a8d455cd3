"""Attacks on each protection of the student sandbox, with the exact outcome asserted.

Each test starts a small sandboxed Python (the same view, identity and limits
a kernel gets, through `Sandbox.wrap`) that tries one attack and prints what
happened as JSON; one test drives a real kernel through `Kernel` to prove the
kernel's start and kill use the same cgroup and working-copy machinery.
Limits are scaled down (MiB, not GiB) so each attack takes seconds.

Skips are per mechanism and say why (no bubblewrap, not root, no cgroup):
on such a machine the protections report must say the same, which
`test_protections_report_names_what_is_missing` checks without any of them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from autograder.publish.words import say
from autograder.sandbox import cgroups, workcopy
from autograder.sandbox.cgroups import CgroupSupport, detect
from autograder.sandbox.launch import Sandbox
from autograder.sandbox.protections import as_json, summary_lines

REPO = Path(__file__).resolve().parents[3]
MiB = 2**20


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> Sandbox:
    base = tmp_path_factory.mktemp("sandbox-base")
    exposed = [sys.prefix, sys.base_prefix, str(REPO / "namedaxes")]
    sb = Sandbox(
        python=sys.executable,
        exposed=exposed,
        memory_bytes=192 * MiB,
        pids_max=256,
        disk_bytes=16 * MiB,
        max_files=1000,
        tmp_bytes=16 * MiB,
        shm_bytes=16 * MiB,
        cpu_seconds=60,
    ).setup(base)
    if not sb.isolate:
        pytest.skip(f"no sandbox on this machine: {sb.why.get('allow_list_view')}")
    return sb


def need(sb: Sandbox, *what: str) -> None:
    reasons = {
        "dedicated": (sb.dedicated, "kernels cannot run as a dedicated uid here: " + sb.why.get("dedicated_uid", "")),
        "memory": (sb.cgroups and sb.cgroups.memory, "no memory cgroup: " + sb.why.get("memory_cgroup", "")),
        "pids": (sb.cgroups and sb.cgroups.pids, "no pids cgroup: " + sb.why.get("pids_cgroup", "")),
        "quota": (sb.quota, "no quota working copies: " + sb.why.get("disk_quota", "")),
    }
    for w in what:
        ok, why = reasons[w]
        if not ok:
            pytest.skip(why)


def workdir(tmp_path: Path, sb: Sandbox, name: str = "w") -> Path:
    w = tmp_path / name
    sb.prepare_workdir(w)
    return w


@pytest.fixture
def copies(tmp_path, sandbox):
    """Working copies made for a test, removed (mounts included) afterwards."""
    made: list[Path] = []

    def make(name: str = "w", sb: Sandbox | None = None) -> Path:
        w = workdir(tmp_path, sb or sandbox, name)
        made.append(w)
        return w

    yield make
    for w in made:
        assert workcopy.remove(w), f"could not remove {w}"


def start(sb: Sandbox, work: Path, code: str, label: str = "t"):
    """Start `code` in the sandbox (in its own cgroup); returns (Popen, Launch)."""
    launch = sb.wrap(work, [sb.python, "-c", textwrap.dedent(code)], label=label)
    try:
        proc = subprocess.Popen(
            launch.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            pass_fds=launch.pass_fds,
            env=sb.env(work, work / "observe"),
            start_new_session=True,
            preexec_fn=sb.preexec(),
        )
    finally:
        launch.close_fds()
    return proc, launch


def finish(proc, launch, timeout: float = 60):
    """(exit code, last stdout line as JSON or None, verdict) after the command ended; cgroup removed."""
    out, err = proc.communicate(timeout=timeout)
    verdict = None
    if launch.cgroup is not None:
        assert launch.cgroup.remove(), "the kernel's cgroup was left behind"
        verdict = launch.cgroup.post_mortem()
    lines = out.decode().strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else None
    except ValueError:
        result = None
    return proc.returncode, result, verdict, err.decode()


def run(sb: Sandbox, work: Path, code: str, timeout: float = 60):
    return finish(*start(sb, work, code), timeout=timeout)


# ---------------------------------------------------------------- the allow-list view
def test_view_shows_only_the_allow_list(sandbox, copies):
    w = copies()
    code, res, _, err = run(
        sandbox,
        w,
        f"""
        import errno, json, os
        def attempt(path):
            try:
                open(path).read(1)
                return "read"
            except OSError as e:
                return errno.errorcode[e.errno]
        print(json.dumps({{
            "shadow": attempt("/etc/shadow"),
            "root_home": os.path.exists("/root/.bashrc") or os.path.exists("/root/.ssh"),
            "home": os.path.exists("/home"),
            "top": sorted(os.listdir("/")),
            "repo": sorted(os.listdir({str(REPO)!r})),
            "solutions": os.path.exists({str(REPO / "solutions")!r}),
            "etc": sorted(os.listdir("/etc")),
            "passwd": open("/etc/passwd").read(),
            "sys": sorted(os.listdir("/sys")),
            "procs": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
            "fds": sorted(int(f) for f in os.listdir("/proc/self/fd")),
            "host_tmp": sorted(os.listdir("/tmp")),
        }}))
        """,
    )
    assert code == 0, err
    assert res["shadow"] == "ENOENT"
    assert not res["root_home"] and not res["home"] and not res["solutions"]
    allowed_top = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc", "dev", "tmp", "sys"}
    extra = set(res["top"]) - allowed_top
    # the remaining top-level names are only the first components of allow-listed paths
    firsts = {Path(p).parts[1] for p in (sys.prefix, sys.base_prefix, REPO, w)}
    assert extra <= firsts, extra
    # of the repository, only what is exposed (the venv if it lives there, the helper package)
    expected_repo = {"namedaxes"} | (
        {Path(sys.prefix).relative_to(REPO).parts[0]} if Path(sys.prefix).is_relative_to(REPO) else set()
    )
    assert set(res["repo"]) == expected_repo
    assert set(res["etc"]) <= {
        "passwd",
        "group",
        "hosts",
        "hostname",
        "nsswitch.conf",
        "ld.so.cache",
        "ld.so.conf",
        "ld.so.conf.d",
        "localtime",
        "fonts",
        "alternatives",
        "mime.types",
    }
    assert "shadow" not in res["etc"] and ":x:0:0:root" in res["passwd"]
    assert res["sys"] == ["devices"]
    assert len(res["procs"]) <= 3, res["procs"]  # its own pid namespace: bwrap's init and itself
    assert res["fds"] == [0, 1, 2, 3], res["fds"]  # 3: listdir's own; no descriptor of the host leaks
    # its /tmp is its own: only the folders leading to what is bound there (e.g. its working copy)
    bound = [w, REPO / "namedaxes", Path(sys.prefix), Path(sys.base_prefix)]
    assert set(res["host_tmp"]) == {p.relative_to("/tmp").parts[0] for p in bound if p.is_relative_to("/tmp")}


def test_another_working_copy_is_invisible(sandbox, copies):
    mine, theirs = copies("mine"), copies("theirs")
    (theirs / "answer.txt").write_text("classmate's work")
    code, res, _, err = run(
        sandbox,
        mine,
        f"""
        import json, os
        print(json.dumps({{"theirs": os.path.exists({str(theirs)!r}),
                           "siblings": sorted(os.listdir({str(mine.parent)!r}))}}))
        """,
    )
    assert code == 0, err
    assert res == {"theirs": False, "siblings": ["mine"]}


def test_writes_outside_the_working_copy_fail(sandbox, copies):
    w = copies()
    code, res, _, err = run(
        sandbox,
        w,
        f"""
        import errno, json, os
        def attempt(path):
            try:
                with open(path, "w") as f:
                    f.write("x")
                return "written"
            except OSError as e:
                return errno.errorcode[e.errno]
        print(json.dumps({{"usr": attempt("/usr/planted"), "venv": attempt({sys.prefix!r} + "/planted"),
                           "pkg": attempt({str(REPO / "namedaxes" / "planted.py")!r}),
                           "passwd": attempt("/etc/passwd"), "root": attempt("/planted"),
                           "tmp": attempt("/tmp/agr-private-tmp-probe"), "work": attempt("inside.txt")}}))
        """,
    )
    assert code == 0, err
    assert res["usr"] == res["venv"] == res["pkg"] == "EROFS"
    assert res["passwd"] in ("EROFS", "EACCES") and res["root"] in ("EACCES", "EROFS")
    assert res["tmp"] == "written" and res["work"] == "written"
    assert not Path("/tmp/agr-private-tmp-probe").exists()  # its /tmp is private
    assert not (REPO / "namedaxes" / "planted.py").exists()
    assert (w / "inside.txt").read_text() == "x"


def test_network_is_off(sandbox, copies):
    w = copies()
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(f"\0agr-test-{os.getpid()}")
    abstract.listen(1)
    try:
        code, res, _, err = run(
            sandbox,
            w,
            f"""
            import errno, json, socket
            def attempt(family, addr):
                s = socket.socket(family, socket.SOCK_STREAM)
                s.settimeout(5)
                try:
                    s.connect(addr)
                    return "connected"
                except OSError as e:
                    return errno.errorcode.get(e.errno, str(e))
            print(json.dumps({{"outside": attempt(socket.AF_INET, ("192.0.2.1", 80)),
                               "host_loopback": attempt(socket.AF_INET, ("127.0.0.1", {server.getsockname()[1]})),
                               "host_abstract": attempt(socket.AF_UNIX, "\\0agr-test-{os.getpid()}")}}))
            """,
        )
    finally:
        server.close()
        abstract.close()
    assert code == 0, err
    assert res == {"outside": "ENETUNREACH", "host_loopback": "ECONNREFUSED", "host_abstract": "ECONNREFUSED"}


# ---------------------------------------------------------------- the identity
def test_kernel_runs_as_the_dedicated_uid_without_privileges(sandbox, copies):
    need(sandbox, "dedicated")
    w = copies()
    code, res, _, err = run(
        sandbox,
        w,
        """
        import json, os
        status = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)
        open("mine.txt", "w").write("x")
        print(json.dumps({"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": os.getgroups(),
                          "caps": [status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")],
                          "nnp": status["NoNewPrivs"].strip()}))
        """,
    )
    assert code == 0, err
    assert res["uid"] == res["euid"] == sandbox.uid and res["gid"] == sandbox.gid
    assert res["groups"] in ([], [sandbox.gid])
    assert res["caps"] == ["0000000000000000"] * 5 and res["nnp"] == "1"
    st = (w / "mine.txt").stat()
    assert (st.st_uid, st.st_gid) == (sandbox.uid, sandbox.gid)  # a real, different host uid
    top = w.stat()
    assert (top.st_uid, top.st_mode & 0o777) == (sandbox.uid, 0o700)  # the working copy is its own


def test_host_file_permissions_protect_too(sandbox, copies, tmp_path):
    """A root-only file bound into the view by mistake is still unreadable: the uid is not root's."""
    need(sandbox, "dedicated")
    secret_dir = tmp_path / "exposed-by-mistake"
    secret_dir.mkdir()
    (secret_dir / "key").write_text("secret")
    os.chmod(secret_dir / "key", 0o600)
    sb = dataclasses.replace(sandbox, exposed=sandbox.exposed + [str(secret_dir)])
    w = copies(sb=sb)
    code, res, _, err = run(
        sb,
        w,
        f"""
        import errno, json
        try:
            open({str(secret_dir / "key")!r}).read(); r = "read"
        except OSError as e:
            r = errno.errorcode[e.errno]
        print(json.dumps(r))
        """,
    )
    assert code == 0, err
    assert res == "EACCES"


def test_kernel_cannot_create_user_namespaces(sandbox, copies):
    """No way to more kernel attack surface: unshare(CLONE_NEWUSER) is refused; threads still work."""
    report = {p.key: p for p in sandbox.protections()}
    if not report["no_new_namespaces"].available:
        pytest.skip(report["no_new_namespaces"].detail)
    w = copies()
    code, res, _, err = run(
        sandbox,
        w,
        """
        import ctypes, errno, json, subprocess, threading
        libc = ctypes.CDLL(None, use_errno=True)
        r = libc.unshare(0x10000000)
        unshare = errno.errorcode.get(ctypes.get_errno()) if r != 0 else "created"
        seen = []
        t = threading.Thread(target=lambda: seen.append("thread")); t.start(); t.join()
        tool = subprocess.run(["unshare", "--user", "true"], capture_output=True).returncode
        print(json.dumps({"unshare": unshare, "thread": seen, "unshare_tool": tool}))
        """,
    )
    assert code == 0, err
    assert res == {"unshare": "EPERM", "thread": ["thread"], "unshare_tool": 1}


# ---------------------------------------------------------------- sizes of /tmp and /dev/shm
def fill_code(path: str) -> str:
    """Kernel code: write `path` MiB by MiB (at most 64); print [errno name or "no limit", MiB written]."""
    return f"""
        import errno, json
        n = 0
        try:
            with open({path!r}, "wb") as f:
                for _ in range(64):
                    f.write(b"x" * 2**20); f.flush(); n += 1
            r = "no limit"
        except OSError as e:
            r = errno.errorcode[e.errno]
        print(json.dumps([r, n]))
        """


@pytest.mark.parametrize("where", ["/tmp", "/dev/shm"])
def test_tmp_and_shm_are_size_limited(sandbox, copies, where):
    w = copies()
    code, res, verdict, err = run(sandbox, w, fill_code(f"{where}/fill"))
    assert code == 0, err
    assert res[0] == "ENOSPC" and 14 <= res[1] <= 16, res  # 16 MiB and not a byte more
    assert verdict is None


# ---------------------------------------------------------------- memory counting everything
SHARED_MMAP = """
    import mmap, sys
    m = mmap.mmap(-1, 1024 * 2**20, flags=mmap.MAP_SHARED)
    for i in range(0, len(m), 4096):
        m[i] = 1
    print('"survived"')
    """
SHM_FILE = """
    with open("/dev/shm/big", "wb") as f:
        for _ in range(1024):
            f.write(b"x" * 2**20)
    print('"survived"')
    """
CLASSMATE = """
    import json, os, time
    time.sleep(1.5)                          # runs while the attacker is being killed
    data = bytearray(64 * 2**20)             # a modest, honest allocation
    pids = []
    for _ in range(20):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        pids.append(pid)
    for p in pids:
        os.waitpid(p, 0)
    open("mine.bin", "wb").write(b"y" * 4 * 2**20)
    print(json.dumps("fine"))
    """


@pytest.mark.parametrize("attack", [SHARED_MMAP, SHM_FILE], ids=["mmap_shared", "dev_shm_file"])
def test_shared_memory_counts_against_the_memory_limit(sandbox, copies, attack):
    need(sandbox, "memory")
    sb = dataclasses.replace(sandbox, shm_bytes=2048 * MiB, memory_bytes=128 * MiB)  # /dev/shm bigger than memory
    attacker, classmate = copies("attacker", sb), copies("classmate", sb)
    a = start(sb, attacker, attack, label="attacker")
    c = start(sb, classmate, CLASSMATE, label="classmate")
    code, res, verdict, err = finish(*a)
    assert res is None and code in (-9, 137), (code, res, err)  # SIGKILL by the cgroup's OOM killer
    assert verdict is not None and verdict.status == "memory" and "128 MiB" in say(verdict.reason, "en")
    ccode, cres, cverdict, cerr = finish(*c)
    assert (ccode, cres, cverdict) == (0, "fine", None), cerr


# ---------------------------------------------------------------- processes
FORK_BOMB = """
    import errno, json, os, time
    n, why = 0, "none"
    kids = []
    for _ in range(2000):
        try:
            pid = os.fork()
        except OSError as e:
            why = errno.errorcode[e.errno]
            break
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        kids.append(pid); n += 1
    for k in kids:
        os.kill(k, 9)
    print(json.dumps([why, n]))
    """


def test_fork_bomb_stops_at_the_pids_limit(sandbox, copies):
    need(sandbox, "pids")
    attacker, classmate = copies("attacker"), copies("classmate")
    a = start(sandbox, attacker, FORK_BOMB, label="attacker")
    c = start(sandbox, classmate, CLASSMATE, label="classmate")
    code, res, verdict, err = finish(*a)
    assert code == 0, err
    assert res[0] == "EAGAIN" and 200 <= res[1] < sandbox.pids_max, res
    assert verdict is not None and verdict.status == "processes" and str(sandbox.pids_max) in say(verdict.reason, "en")
    ccode, cres, cverdict, cerr = finish(*c)
    assert (ccode, cres, cverdict) == (0, "fine", None), cerr


def test_without_a_pids_cgroup_rlimit_nproc_bounds_the_dedicated_uid(sandbox, copies):
    """The documented fallback: RLIMIT_NPROC works because the kernel's uid is not root (own uid here)."""
    need(sandbox, "dedicated")
    sb = dataclasses.replace(
        sandbox,
        cgroups=CgroupSupport(memory=sandbox.cgroups.memory if sandbox.cgroups else None),
        uid=64_321,
        gid=64_321,
        pids_max=64,
    )
    w = copies(sb=sb)
    code, res, verdict, err = run(sb, w, FORK_BOMB)
    assert code == 0, err
    assert res[0] == "EAGAIN" and 40 <= res[1] < 64, res
    assert verdict is None  # no pids cgroup: the fallback cannot tell afterwards
    report = {p.key: p for p in sb.protections()}
    assert not report["process_limit"].available and "RLIMIT_NPROC 64 for uid 64321" in report["process_limit"].detail


# ---------------------------------------------------------------- disk and files of the working copy
def test_disk_quota_of_the_working_copy(sandbox, copies):
    need(sandbox, "quota")
    attacker, classmate = copies("attacker"), copies("classmate")
    code, res, _, err = run(sandbox, attacker, fill_code("fill.bin"))
    assert code == 0, err
    assert res[0] == "ENOSPC" and 12 <= res[1] <= 16, res
    hit = sandbox.disk_full(attacker)
    assert hit is not None and hit.status == "disk" and "16 MiB" in say(hit.reason, "en")
    (classmate / "answer.bin").write_bytes(b"y" * 8 * MiB)  # classmates' space is their own
    assert sandbox.disk_full(classmate) is None
    assert workcopy.is_quota_mount(attacker) and workcopy.remove(attacker) and not attacker.exists()


def test_file_count_quota_of_the_working_copy(sandbox, copies):
    need(sandbox, "quota")
    w = copies()
    code, res, _, err = run(
        sandbox,
        w,
        """
        import errno, json, os
        os.mkdir("many")
        n, r = 0, "no limit"
        for i in range(100_000):
            try:
                open(f"many/{i}", "w").close(); n += 1
            except OSError as e:
                r = errno.errorcode[e.errno]
                break
        print(json.dumps([r, n]))
        """,
    )
    assert code == 0, err
    assert res[0] == "ENOSPC" and 900 <= res[1] < 1000, res
    hit = sandbox.disk_full(w)
    assert hit is not None and hit.status == "disk" and "1000 files" in say(hit.reason, "en")


# ---------------------------------------------------------------- the shared XLA cache
COMPILE = """
    import json, os
    {prelude}
    import jax, jax.numpy as jnp
    events = []
    jax.monitoring.register_event_listener(lambda name, **kw: events.append(name))
    jax.jit(lambda x: jnp.sin(x) * 2 + 1)(jnp.arange(8.0)).block_until_ready()
    folder = {folder!r}
    try:
        listing = len(os.listdir(folder))
    except OSError as e:
        listing = type(e).__name__
    print(json.dumps({{"hits": sum("cache_hits" in e for e in events),
                       "misses": sum("cache_misses" in e for e in events), "listing": listing}}))
    """


def test_xla_cache_is_reused_by_name_but_not_listable(sandbox, copies, tmp_path):
    """The reference kernel fills the cache; a student kernel gets cache hits, cannot list or change it."""
    from autograder.sandbox.xla_cache import REFERENCE_ENV, publish_xla_cache, xla_prelude

    root = tmp_path / "xla-cache"
    tmp, final = root / "02_scaled_sum-0123456789abcdef.tmp", root / "02_scaled_sum-0123456789abcdef"
    tmp.mkdir(parents=True)
    os.chmod(tmp, 0o300)
    sb = dataclasses.replace(sandbox, exposed=sandbox.exposed + [str(root)], memory_bytes=2048 * MiB)
    ref_work = copies("reference", sb)
    sb.hand_over(tmp)  # what Kernel.start does with `writable`
    launch = sb.wrap(
        ref_work, [sb.python, "-c", textwrap.dedent(COMPILE.format(prelude="", folder=str(tmp)))], writable=(tmp,)
    )
    env = {**sb.env(ref_work, ref_work / "observe"), **REFERENCE_ENV, "JAX_COMPILATION_CACHE_DIR": str(tmp)}
    try:
        ref = subprocess.run(
            launch.argv, capture_output=True, pass_fds=launch.pass_fds, env=env, timeout=120, preexec_fn=sb.preexec()
        )
    finally:
        launch.close_fds()
    assert ref.returncode == 0, ref.stderr.decode()[-2000:]
    ref_res = json.loads(ref.stdout.decode().splitlines()[-1])
    assert ref_res["hits"] == 0 and ref_res["misses"] >= 1, ref_res
    publish_xla_cache(tmp, final)
    entries = [e for e in os.listdir(final) if e != ".complete"]
    assert entries, "the reference run wrote nothing into the cache"
    assert final.stat().st_mode & 0o777 == 0o111
    assert {(final / e).stat().st_mode & 0o777 for e in entries} == {0o444}
    student = copies("student", sb)
    prelude = xla_prelude(str(final)).replace("\n", "\n    ")
    code, res, _, err = run(sb, student, COMPILE.format(prelude=prelude, folder=str(final)), timeout=120)
    assert code == 0, err
    # every program the reference compiled is a hit; the student cannot list the folder
    assert res == {"hits": ref_res["misses"], "misses": 0, "listing": "PermissionError"}, (res, ref_res)
    assert sorted(os.listdir(final)) == sorted(entries + [".complete"])  # nothing added by the student


def test_publishing_keeps_other_recent_versions_of_the_cache(tmp_path):
    """Two runs grading different versions of one assignment at once must not delete each other's cache."""
    from autograder.sandbox.xla_cache import KEEP_VERSIONS, publish_xla_cache

    root = tmp_path / "xla-cache"
    names = [f"02_scaled_sum-{i:016x}" for i in range(KEEP_VERSIONS + 2)]
    for i, name in enumerate(names):
        tmp = root / (name + ".tmp")
        tmp.mkdir(parents=True)
        (tmp / "entry-cache").write_bytes(b"compiled")
        publish_xla_cache(tmp, root / name)
        os.utime(root / name, (1_000_000 + i, 1_000_000 + i))
    other = root / "03_nested_axes-0000000000000000"
    other.mkdir()
    tmp = root / "02_scaled_sum-ffffffffffffffff.tmp"
    tmp.mkdir()
    publish_xla_cache(tmp, root / "02_scaled_sum-ffffffffffffffff")
    left = sorted(p.name for p in root.iterdir())
    assert left == sorted(names[-(KEEP_VERSIONS - 1) :] + ["02_scaled_sum-ffffffffffffffff", other.name])


def test_publishing_a_version_that_is_already_there_keeps_it(tmp_path):
    """A second reference run of the same version (its references were recomputed, or a concurrent run)
    must not fail the batch: the published cache stays, the new copy is dropped."""
    from autograder.sandbox.xla_cache import publish_xla_cache

    final = tmp_path / "01_axis_names-0123456789abcdef"
    for content in (b"first", b"second"):
        tmp = tmp_path / (final.name + ".tmp")
        tmp.mkdir()
        (tmp / "k-cache").write_bytes(content)
        publish_xla_cache(tmp, final)
        assert not tmp.exists()
    assert (final / "k-cache").read_bytes() == b"first" and (final / ".complete").exists()


def test_caches_published_by_older_graders_get_the_new_modes(tmp_path):
    from autograder.sandbox.xla_cache import protect_published

    old = tmp_path / "01_axis_names-0123456789abcdef"
    old.mkdir()
    (old / ".complete").write_text("")
    (old / "k-cache").write_bytes(b"compiled")
    os.chmod(old / "k-cache", 0o400)
    os.chmod(old, 0o100)  # the owner-only scheme of the userns days
    half = tmp_path / "02_scaled_sum-0123456789abcdef"
    half.mkdir()  # no .complete: not to be used, not listable
    protect_published(tmp_path)
    assert old.stat().st_mode & 0o777 == 0o111 and (old / "k-cache").stat().st_mode & 0o777 == 0o444
    assert half.stat().st_mode & 0o777 == 0o100


# ---------------------------------------------------------------- clean-up
def test_cgroup_removal_kills_stragglers_and_keeps_the_verdict(sandbox, copies):
    need(sandbox, "pids")
    w = copies()
    proc, launch = start(
        sandbox,
        w,
        """
        import os, time
        for _ in range(300):
            try:
                if os.fork() == 0:
                    time.sleep(60); os._exit(0)
            except OSError:
                break
        print("forked", flush=True)
        time.sleep(60)
        """,
    )
    assert proc.stdout.readline().strip() == b"forked"
    group = launch.cgroup
    dirs = {p for _, p in group.groups.values()}
    assert len(group.pids()) > 100
    t0 = time.monotonic()
    assert group.remove()
    assert time.monotonic() - t0 < 5
    assert not any(d.exists() for d in dirs)
    assert group.post_mortem().status == "processes"
    proc.wait(timeout=10)


def test_sweep_removes_groups_of_dead_graders_only(sandbox):
    need(sandbox, "pids")
    parent = sandbox.cgroups.pids.parent
    dead = next(p for p in range(4_000_000, 4_100_000) if not os.path.exists(f"/proc/{p}"))
    stale, live = parent / f"agr-{dead}-1-k0", parent / f"agr-{os.getpid()}-999-k0"
    stale.mkdir()
    live.mkdir()
    try:
        assert cgroups.sweep_stale(sandbox.cgroups) >= 1
        assert not stale.exists() and live.exists()
    finally:
        for d in (stale, live):
            if d.exists():
                d.rmdir()


def test_removal_survives_a_hostile_tree(tmp_path):
    """Symlinks out, a deep tree, a locked folder: removed without touching anything outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    w = tmp_path / "w"
    w.mkdir()
    (w / "link").symlink_to(outside)
    (w / "file-link").symlink_to(outside / "keep.txt")
    deep = os.open(w, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1100):  # deeper than the recursion limit and PATH_MAX
        os.mkdir("level-09", dir_fd=deep)
        nxt = os.open("level-09", os.O_RDONLY | os.O_DIRECTORY, dir_fd=deep)
        os.close(deep)
        deep = nxt
    os.symlink(str(outside), "up", dir_fd=deep)
    os.close(deep)
    (w / "locked").mkdir()
    (w / "locked" / "inner").write_text("x")
    os.chmod(w / "locked", 0)
    assert workcopy.remove(w)
    assert not os.path.lexists(w)
    assert (outside / "keep.txt").read_text() == "keep"


def test_removal_through_an_open_folder(tmp_path):
    """The executor empties the observation folder through its descriptor: links inside stay unfollowed."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    observe = tmp_path / "observe"
    (observe / "sub" / "deeper").mkdir(parents=True)
    (observe / "sub" / "link").symlink_to(outside)
    (observe / "dirlink").symlink_to(outside)
    fd = os.open(observe, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert workcopy.remove(f"/proc/self/fd/{fd}/sub")
        assert workcopy.remove_at(fd, "dirlink")
    finally:
        os.close(fd)
    assert os.listdir(observe) == [] and (outside / "keep.txt").read_text() == "keep"


def test_remove_tree_detaches_leftover_quota_mounts(sandbox, tmp_path):
    need(sandbox, "quota")
    root = tmp_path / "work-root"
    for name in ("a", "b"):
        sandbox.prepare_workdir(root / name)
        (root / name / "x").write_text("x")
    assert workcopy.is_quota_mount(root / "a")
    assert workcopy.remove_tree(root)
    assert not root.exists()
    assert str(root) not in Path("/proc/self/mountinfo").read_text()


def test_no_working_copy_is_mounted_once_the_run_removed_its_folder(sandbox, tmp_path):
    """A worker still starting a kernel after the run cleaned up must not leave a mount behind."""
    need(sandbox, "quota")
    root = tmp_path / "run"
    sb = dataclasses.replace(sandbox).setup(root)
    sb.prepare_workdir(root / "w0-1")
    assert workcopy.remove_tree(root)
    (root / "w0-2").mkdir(parents=True)  # what a late worker does
    with pytest.raises(OSError, match="is over"):
        sb.prepare_workdir(root / "w0-2")
    assert str(root) not in Path("/proc/self/mountinfo").read_text()


# ---------------------------------------------------------------- a real kernel
def test_kernel_start_and_kill_use_the_cgroup_and_quota(sandbox, tmp_path):
    need(sandbox, "memory", "quota")
    from autograder.run.kernel import Kernel

    sb = dataclasses.replace(sandbox, memory_bytes=512 * MiB, shm_bytes=2048 * MiB)
    w = tmp_path / "kernel-work"
    kernel = Kernel(w, sb, label="k0", log_dir=tmp_path).start()
    try:
        kernel.wait_ready(120)
        assert workcopy.is_quota_mount(w)
        assert kernel.cgroup is not None and kernel.post_mortem() is None
        ok = kernel.execute("import os; print(os.getuid(), len(os.listdir('/proc/self/fd')))", 30)
        assert ok.status == "ok"
        dead = kernel.execute(textwrap.dedent(SHM_FILE), 60)
        assert dead.status == "died"
        hit = kernel.post_mortem()
        assert hit is not None and hit.status == "memory"
    finally:
        kernel.kill()
    dirs = [p for _, p in kernel.cgroup.groups.values()]
    assert not any(d.exists() for d in dirs)
    assert kernel.post_mortem().status == "memory"  # still known after the clean-up
    assert workcopy.remove(w) and not w.exists()


# ---------------------------------------------------------------- the report
def test_protections_report_on_this_machine(sandbox):
    report = {p.key: p for p in sandbox.protections()}
    assert list(report) == [
        "allow_list_view",
        "dedicated_uid",
        "network_off",
        "private_tmp",
        "memory_cgroup",
        "process_limit",
        "disk_quota",
        "cpu_time",
        "no_new_namespaces",
        "syscall_filter",
    ]
    assert report["allow_list_view"].available and report["network_off"].available
    assert report["no_new_namespaces"].available == (os.uname().machine in ("x86_64", "aarch64"))
    from autograder.sandbox.seccomp import kernel_filter

    bpf, why = kernel_filter()
    assert report["syscall_filter"].available == (not why)
    if why:  # said loudly, with the way to get it
        assert "apt-get install libseccomp2" in report["syscall_filter"].detail, report["syscall_filter"].detail
    else:
        assert "Docker's default profile" in report["syscall_filter"].detail and len(bpf) % 8 == 0
    assert report["memory_cgroup"].available == bool(sandbox.cgroups.memory)
    assert report["disk_quota"].available == sandbox.quota
    rows = as_json(sandbox.protections())
    assert rows[0] == {
        "key": "allow_list_view",
        "title": report["allow_list_view"].title,
        "available": True,
        "detail": report["allow_list_view"].detail,
    }
    assert json.loads(json.dumps(rows)) == rows


def test_protections_report_names_what_is_missing(tmp_path):
    """Without bubblewrap, cgroups or root, the report says so, and why (what make grade prints)."""
    sb = Sandbox(
        isolate=False,
        cgroups=CgroupSupport(
            why={
                "memory": "cgroup v2: the memory controller is not available in /sys/fs/cgroup/x (not delegated)",
                "pids": "no cgroup hierarchy offers the pids controller",
            }
        ),
    )
    sb.why = {
        "allow_list_view": "bubblewrap (bwrap) is not installed",
        "disk_quota": "the grader is not root",
        "memory_cgroup": sb.cgroups.why["memory"],
        "pids_cgroup": sb.cgroups.why["pids"],
    }
    report = {p.key: p for p in sb.protections()}
    assert [k for k, p in report.items() if p.available] == ["cpu_time"]
    assert report["allow_list_view"].detail.startswith("bubblewrap (bwrap) is not installed")
    assert "not delegated" in report["memory_cgroup"].detail and "RLIMIT_DATA" in report["memory_cgroup"].detail
    assert "no process limit" in report["process_limit"].detail
    assert "RLIMIT_FSIZE" in report["disk_quota"].detail
    lines = summary_lines(sb.protections())
    assert lines[0].startswith("protections: 1 of 10 in force; MISSING: allow-list view of the file system")
    assert len(lines) == 10
    assert report["syscall_filter"].detail.startswith("no sandbox, so no seccomp filter")


NON_ROOT_GRADER = """
import json, subprocess, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from autograder.sandbox.launch import Sandbox
sb = Sandbox(python=sys.executable).setup({base!r})
w = Path({base!r}) / "w"
sb.prepare_workdir(w)
code = "import json, os; print(json.dumps([os.getuid(), os.path.exists('/etc/shadow'), os.path.exists({repo!r})]))"
launch = sb.wrap(w, [sys.executable, "-c", code], label="k")
out = subprocess.run(launch.argv, pass_fds=launch.pass_fds, env=sb.env(w, w / "observe"), capture_output=True,
                     text=True)
print(json.dumps({{"available": {{p.key: p.available for p in sb.protections()}}, "inside": json.loads(out.stdout),
                  "details": {{p.key: p.detail for p in sb.protections()}}}}))
"""


def test_a_grader_that_is_not_root_still_isolates_and_says_what_is_missing():
    """The fallback: no dedicated uid, cgroups or quota without root; the view still works (user namespace)."""
    system_python = Path("/usr/bin/python3")
    if os.geteuid() != 0 or not system_python.exists():
        pytest.skip("needs root (to become another user) and a system Python (stdlib only is enough)")
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    if subprocess.run(as_nobody + ["test", "-r", str(REPO / "autograder" / "sandbox" / "launch.py")]).returncode != 0:
        pytest.skip("the repository is not readable by another user here")
    base = Path(tempfile.mkdtemp(prefix="agr-nonroot-"))  # not under pytest's 0700 folder
    try:
        os.chown(base, 65534, 65534)
        proc = subprocess.run(
            as_nobody + [str(system_python), "-c", NON_ROOT_GRADER.format(repo=str(REPO), base=str(base))],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=base,
        )
    finally:
        assert workcopy.remove_tree(base)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.splitlines()[-1])
    assert res["available"] == {
        "allow_list_view": True,
        "dedicated_uid": False,
        "network_off": True,
        "private_tmp": True,
        "memory_cgroup": False,
        "process_limit": False,
        "disk_quota": False,
        "cpu_time": True,
        "no_new_namespaces": True,
        "syscall_filter": True,
    }, res["details"]
    assert res["inside"] == [1000, False, False]  # uid 1000 in its namespace; no shadow, no repository
    assert "the grader is not root" in res["details"]["dedicated_uid"]
    assert "the grader is not root" in res["details"]["disk_quota"]
    assert "Permission denied" in res["details"]["memory_cgroup"] and "RLIMIT_DATA" in res["details"]["memory_cgroup"]


# ---------------------------------------------------------------- detecting cgroups (no root needed)
def _fake_proc(tmp_path: Path, mountinfo: str, cgroup: str) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "mountinfo").write_text(mountinfo)
    (proc / "cgroup").write_text(cgroup)
    return proc


def test_detect_reads_v1_and_v2_layouts(tmp_path):
    fs = tmp_path / "cg"
    (fs / "memory" / "grader").mkdir(parents=True)
    (fs / "unified" / "user.slice").mkdir(parents=True)
    (fs / "unified" / "user.slice" / "cgroup.controllers").write_text("cpu io\n")
    mountinfo = (
        f"30 25 0:26 / {fs}/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
        f"31 25 0:27 / {fs}/unified rw,relatime shared:10 - cgroup2 cgroup2 rw\n"
    )
    proc = _fake_proc(tmp_path, mountinfo, "4:memory:/grader\n0::/user.slice\n")
    got = detect(root=fs, proc=proc)
    # a plain folder is not cgroupfs: the child group lacks the limit file, and that is what is said
    assert got.memory is None and "memory.limit_in_bytes" in got.why["memory"]
    assert (
        got.pids is None
        and got.why["pids"]
        == f"cgroup v2: the pids controller is not available in {fs}/unified/user.slice (not delegated)"
    )
    assert not [p for p in (fs / "memory" / "grader").iterdir()]  # the probe group was removed


def test_detect_without_any_cgroup_mount(tmp_path):
    got = detect(proc=_fake_proc(tmp_path, "22 1 0:5 / /proc rw - proc proc rw\n", ""))
    assert got.memory is None and got.pids is None and "no cgroup file system is mounted" in got.why["memory"]


def test_detect_on_this_machine_matches_the_sandbox(sandbox):
    got = detect()
    assert (got.memory is None) == (sandbox.cgroups.memory is None)
    assert (got.pids is None) == (sandbox.cgroups.pids is None)
    assert cgroups.sweep_stale(got) >= 0


# ---------------------------------------------------------------- the system-call allow-list (seccomp.py)
# Each refused call with arguments that are harmless where the call is allowed (the control shows what it
# does there): (name, arguments). "<self>" is the caller's pid, "<buf>" a zeroed 256-byte buffer.
SYSCALL_ATTEMPTS = (
    ("add_key", (0, 0, 0, 0, 0)),  # NULL type: EFAULT where allowed
    ("keyctl", (0, -4, 0)),  # KEYCTL_GET_KEYRING_ID of the user keyring: its id
    ("request_key", (0, 0, 0, 0)),
    ("io_uring_setup", (1, "<buf>")),  # a ring's descriptor where allowed
    ("io_uring_enter", (-1, 0, 0, 0, 0, 0)),
    ("io_uring_register", (-1, 0, 0, 0)),
    ("bpf", (0, 0, 0)),
    ("perf_event_open", (0, 0, -1, -1, 0)),
    ("userfaultfd", (0,)),
    ("ptrace", (2, "<self>", 0, 0)),  # PTRACE_PEEKDATA of itself: ESRCH (not traced)
    ("process_vm_readv", ("<self>", 0, 0, 0, 0, 0)),  # nothing to read: 0
    ("kcmp", ("<self>", "<self>", 0, 0, 0)),
    ("pidfd_getfd", (-1, 0, 0)),
    ("mount", (0, 0, 0, 0, 0)),
    ("umount2", (0, 0)),
    ("fsopen", (0, 0)),
    ("open_tree", (-1, 0, 0)),
    ("move_mount", (-1, 0, -1, 0, 0)),
    ("pivot_root", (0, 0)),
    ("chroot", (0,)),  # NULL path: EFAULT where allowed
    ("unshare", (0,)),  # no flags: a no-op where allowed
    ("setns", (-1, 0)),
    ("kexec_load", (0, 0, 0, 0)),
    ("kexec_file_load", (-1, -1, 0, 0, 0)),
    ("init_module", (0, 0, 0)),
    ("finit_module", (-1, 0, 0)),
    ("delete_module", (0, 0)),
    ("reboot", (0, 0, 0, 0)),
    ("swapon", (0, 0)),
    ("swapoff", (0,)),
    ("settimeofday", (0, 0)),  # both NULL: a no-op where allowed
    ("clock_settime", (0, 0)),
    ("syslog", (10, 0, 0)),
    ("acct", (0,)),
    ("quotactl", (0, 0, 0, 0)),
    ("lookup_dcookie", (0, 0, 0)),
    ("open_by_handle_at", (-1, 0, 0)),
    ("fanotify_init", (0, 0)),
    ("iopl", (0,)),
    ("ioperm", (0, 0, 0)),
    ("vhangup", ()),
    ("sethostname", (0, 0)),
    ("setdomainname", (0, 0)),
    ("mbind", (0, 0, 0, 0, 0, 0)),
    ("set_mempolicy", (0, 0, 0)),
    ("get_mempolicy", (0, 0, 0, 0, 0)),
)

SYSCALL_PROBE = """
import ctypes, errno, json, os, socket, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(256)
def call(nr, *args):
    conv = [ctypes.c_long(os.getpid()) if a == "<self>" else buf if a == "<buf>" else ctypes.c_long(a)
            for a in args]
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *conv)
    if r >= 0 and nr == NUMBERS.get("io_uring_setup"):
        os.close(r)
    return "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
out = {name: call(NUMBERS[name], *args) for name, args in ATTEMPTS if name in NUMBERS}
out["clone3"] = call(NUMBERS["clone3"], 0, 0)
if X32:
    out["x32_getpid"] = call(0x40000000 | NUMBERS["getpid"])
out["personality_query"] = call(NUMBERS["personality"], 0xFFFFFFFF)
out["personality_read_implies_exec"] = call(NUMBERS["personality"], 0x0400000)
try:
    socket.socket(40, socket.SOCK_STREAM).close(); out["socket_vsock"] = "ok"
except OSError as e:
    out["socket_vsock"] = errno.errorcode[e.errno]
# what must keep working: threads, fork/exec, loopback TCP, socketpair, eventfd
seen = []
t = threading.Thread(target=lambda: seen.append(1)); t.start(); t.join()
out["thread"] = "ok" if seen else "failed"
out["subprocess"] = "ok" if subprocess.run(["true"]).returncode == 0 else "failed"
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
cli = socket.create_connection(srv.getsockname()); conn, _ = srv.accept(); cli.sendall(b"x")
out["loopback_tcp"] = "ok" if conn.recv(1) == b"x" else "failed"
for s in (cli, conn, srv):
    s.close()
a, b = socket.socketpair(); a.close(); b.close()
os.close(os.eventfd(0)); out["socketpair_eventfd"] = "ok"
out["proc_keys"] = open("/proc/keys").read() if os.path.exists("/proc/keys") else None
print(json.dumps(out))
"""


def _numbers(names) -> dict[str, int]:
    from autograder.sandbox import seccomp

    return {n: nr for n in names if (nr := seccomp.resolve(n)) is not None}


def _probe_code() -> str:
    names = [n for n, _ in SYSCALL_ATTEMPTS] + ["clone3", "getpid", "personality"]
    return (
        f"NUMBERS = {_numbers(names)!r}\nATTEMPTS = {SYSCALL_ATTEMPTS!r}\n"
        f"X32 = {os.uname().machine == 'x86_64'!r}\n" + SYSCALL_PROBE
    )


def _without_seccomp(launch):
    """The control: the same launch without bwrap's --seccomp (what the sandbox was before seccomp.py)."""
    i = launch.argv.index("--seccomp")
    launch.argv[i : i + 2] = []
    return launch


def run_unfiltered(sb: Sandbox, work: Path, code: str, timeout: float = 60):
    launch = _without_seccomp(sb.wrap(work, [sb.python, "-c", textwrap.dedent(code)], label="ctl"))
    try:
        proc = subprocess.Popen(
            launch.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            pass_fds=launch.pass_fds,
            env=sb.env(work, work / "observe"),
            start_new_session=True,
            preexec_fn=sb.preexec(),
        )
    finally:
        launch.close_fds()
    return finish(proc, launch, timeout)


def need_allow_list(sb: Sandbox) -> None:
    report = {p.key: p for p in sb.protections()}
    if not report["syscall_filter"].available:
        pytest.skip(report["syscall_filter"].detail)


def kernel_json(kernel, code: str, timeout: float = 60):
    """Run `code` in a started Kernel; the JSON of its last stdout line."""
    ran = kernel.execute(textwrap.dedent(code), timeout)
    text = "".join(
        o.get("text", "") for o in ran.outputs if o.get("output_type") == "stream" and o.get("name") == "stdout"
    )
    assert ran.status == "ok", (ran.status, ran.ename, ran.evalue, ran.outputs)
    return json.loads(text.strip().splitlines()[-1])


def start_kernel(sb: Sandbox, tmp_path: Path, label: str):
    """A real kernel (ipykernel, zmq, the warm imports of numpy and jax) in the sandbox, ready."""
    from autograder.run.kernel import Kernel

    sb = dataclasses.replace(sb, memory_bytes=1024 * MiB)  # the fixture's 192 MiB is too small for jax
    kernel = Kernel(tmp_path / f"kernel-{label}", sb, label=label, log_dir=tmp_path)
    try:
        kernel.start()
        kernel.wait_ready(120)
    except BaseException:
        kernel.kill()
        workcopy.remove(kernel.workdir)
        raise
    return kernel


def stop_kernel(kernel) -> None:
    kernel.kill()
    assert workcopy.remove(kernel.workdir)


KEY_CODE = """
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
ADD_KEY, KEYCTL, REQUEST_KEY = NUMBERS["add_key"], NUMBERS["keyctl"], NUMBERS["request_key"]
USER_KEYRING, SEARCH, READ, INVALIDATE = -4, 10, 11, 21
def result(r):
    return r if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
def sc(nr, *args):
    ctypes.set_errno(0)
    return result(libc.syscall(ctypes.c_long(nr), *args))
L = ctypes.c_long
out = {}
if "plant" in DO:
    out["plant"] = sc(ADD_KEY, b"user", NAME, PAYLOAD, L(len(PAYLOAD)), L(USER_KEYRING))
if "find" in DO:
    buf = ctypes.create_string_buffer(256)
    out["request_key"] = sc(REQUEST_KEY, b"user", NAME, L(0), L(0))
    out["search"] = sc(KEYCTL, L(SEARCH), L(USER_KEYRING), b"user", NAME, L(0))
    n = sc(KEYCTL, L(READ), L(KEY_ID), buf, L(256))
    out["read"] = buf.raw[:n].decode() if isinstance(n, int) else n
    out["proc_keys"] = open("/proc/keys").read()
if "remove" in DO:
    out["remove"] = sc(KEYCTL, L(INVALIDATE), L(KEY_ID))
print(json.dumps(out))
"""


def _key_code(do: tuple[str, ...], name: bytes, key_id: int = 0) -> str:
    return (
        f"NUMBERS = {_numbers(['add_key', 'keyctl', 'request_key'])!r}\nDO = {do!r}\nNAME = {name!r}\n"
        f"PAYLOAD = b'written by another kernel'\nKEY_ID = {key_id}\n" + KEY_CODE
    )


def test_syscall_allow_list_refuses_dockers_refusals_in_a_real_kernel(sandbox, tmp_path, copies):
    """Every family Docker's default profile refuses fails with EPERM in a kernel (clone3 and foreign ABIs with
    ENOSYS), while threads, subprocesses, loopback TCP (zmq, gloo), socketpair and eventfd work; /proc/keys is
    empty. The control (the same sandbox without the filter) shows the calls are open on this host."""
    need_allow_list(sandbox)
    kernel = start_kernel(sandbox, tmp_path, "sc")
    try:
        seen = kernel_json(kernel, _probe_code())
    finally:
        stop_kernel(kernel)
    expected = {name: "EPERM" for name in _numbers(n for n, _ in SYSCALL_ATTEMPTS)}
    expected.update(
        clone3="ENOSYS",
        personality_query="ok",
        personality_read_implies_exec="EPERM",
        socket_vsock="EPERM",
        thread="ok",
        subprocess="ok",
        loopback_tcp="ok",
        socketpair_eventfd="ok",
        proc_keys="",
    )
    if os.uname().machine == "x86_64":
        expected["x32_getpid"] = "ENOSYS"
    assert seen == expected
    code, control, _, err = run_unfiltered(sandbox, copies(), _probe_code())
    assert code == 0, err
    open_here = {
        "keyctl": "ok",
        "unshare": "ok",
        "process_vm_readv": "ok",
        "ptrace": "ESRCH",
        "chroot": "EFAULT",
        "setns": "EBADF",
        "pidfd_getfd": "EBADF",
        "personality_read_implies_exec": "ok",
    }
    if Path("/proc/sys/kernel/io_uring_disabled").read_text().strip() in ("", "0"):
        open_here["io_uring_setup"] = "ok"
    assert {k: control[k] for k in open_here} == open_here


def test_a_key_one_kernel_writes_never_reaches_another(sandbox, tmp_path, copies):
    """The keyring channel: kernels cannot add keys, and a key in the uid's user keyring (planted by the control,
    a sandbox without the filter, as every kernel was before) is invisible to a later kernel, which is told EPERM
    however it asks, while a later unfiltered sandbox of the same uid still reads it."""
    need_allow_list(sandbox)
    name = b"agr-probe-" + os.urandom(6).hex().encode()
    writer = start_kernel(sandbox, tmp_path, "kw")
    try:
        assert kernel_json(writer, _key_code(("plant",), name)) == {"plant": "EPERM"}
    finally:
        stop_kernel(writer)
    code, planted, _, err = run_unfiltered(sandbox, copies("plant"), _key_code(("plant",), name))
    assert code == 0, err
    if planted["plant"] in ("ENOSYS", "EOPNOTSUPP"):
        pytest.skip(f"this host kernel has no keyrings ({planted['plant']}): the channel does not exist here")
    key_id = planted["plant"]
    assert isinstance(key_id, int), planted
    try:
        reader = start_kernel(sandbox, tmp_path, "kr")
        try:
            seen = kernel_json(reader, _key_code(("find",), name, key_id))
        finally:
            stop_kernel(reader)
        assert seen == {"request_key": "EPERM", "search": "EPERM", "read": "EPERM", "proc_keys": ""}
    finally:
        code, control, _, err = run_unfiltered(sandbox, copies("control"), _key_code(("find", "remove"), name, key_id))
    assert code == 0, err
    assert control == {
        "request_key": key_id,
        "search": key_id,
        "read": "written by another kernel",
        "proc_keys": "",
        "remove": 0,
    }


def test_without_libseccomp_the_report_says_so_and_the_namespace_filter_stays(monkeypatch):
    """A machine without libseccomp: the allow-list is reported missing (with how to install it), and the
    hand-assembled filter still refuses new user namespaces."""
    from autograder.sandbox import seccomp, view

    monkeypatch.setattr(seccomp.ctypes.util, "find_library", lambda name: "libseccomp-not-here.so.2")
    caches = (seccomp._lib, seccomp.compile_filter, seccomp.kernel_filter)
    for cached in caches:
        cached.cache_clear()
    try:
        bpf, why = seccomp.kernel_filter()
        assert bpf == seccomp.userns_filter()
        assert why.startswith("libseccomp is not installed (Debian/Ubuntu: apt-get install libseccomp2)"), why
        report = {p.key: p for p in Sandbox().protections()}
        assert not report["syscall_filter"].available
        assert report["syscall_filter"].detail.startswith(why) and "keyrings" in report["syscall_filter"].detail
        if bpf is not None and "--seccomp" in view.bwrap_options():
            assert report["no_new_namespaces"].detail.startswith(
                "a seccomp filter refuses unshare/clone with CLONE_NEWUSER"
            )
        assert "system calls limited" in summary_lines(list(report.values()))[0]
    finally:
        for cached in caches:
            cached.cache_clear()
