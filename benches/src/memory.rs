//! The release binary's peak resident memory on a generated cluster, read from
//! `/proc/PID/status` (`VmHWM`) while it runs: the node agent as the DaemonSet runs it (its
//! allocator's settings, [`DAEMONSET_ENV`]) with `--manifests FILE --dry-run --once` for one
//! worker ([`agent_peak`]), and any offline command with its output read and counted, the time
//! of its first byte noted ([`command_peak`]).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The allocator's settings `deploy/daemonset.yaml` gives the agent (its test checks the
/// manifest holds these): freed memory returned at once, arenas committed as they fill.
pub const DAEMONSET_ENV: [(&str, &str); 2] = [
    ("MIMALLOC_PURGE_DELAY", "0"),
    ("MIMALLOC_ARENA_EAGER_COMMIT", "0"),
];

/// What one run of the agent measured.
#[derive(Clone, Copy, Debug)]
pub struct Peak {
    /// Peak resident set size in bytes.
    pub bytes: u64,
    /// Wall-clock time of the run.
    pub took: Duration,
}

/// The release agent binary beside the running executable (`target/release/unbounded-mtu`).
pub fn agent_binary() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let bin = me
        .parent()
        .map(|d| d.join("unbounded-mtu"))
        .ok_or("no directory for the running executable")?;
    if bin.exists() {
        Ok(bin)
    } else {
        Err(format!(
            "{} is missing: run `cargo build --release -p agent` first",
            bin.display()
        ))
    }
}

/// Runs the agent for `node` over `yaml` (written to a temporary file) and returns its peak:
/// the largest `VmHWM` (the kernel's high-water mark of the process's own resident set) read
/// from `/proc` every millisecond until the process exits. `ru_maxrss` cannot be used: a child
/// started by `posix_spawn` counts the parent's peak as its own. The agent's peak comes while it
/// resolves, well before it prints and exits, so the last reading holds it.
pub fn agent_peak(yaml: &str, node: &str) -> Result<Peak, String> {
    let bin = agent_binary()?;
    let file = std::env::temp_dir().join(format!("perf-budget-{}.yaml", std::process::id()));
    std::fs::write(&file, yaml).map_err(|e| format!("write {}: {e}", file.display()))?;
    let result = run_and_watch(&bin, &file, node);
    let _ = std::fs::remove_file(&file);
    result
}

fn run_and_watch(
    bin: &std::path::Path,
    file: &std::path::Path,
    node: &str,
) -> Result<Peak, String> {
    let started = Instant::now();
    let child = spawn_agent(bin, node, &["--manifests".as_ref(), file.as_os_str()])?;
    watch(child, started, None)
}

/// The agent of `node` started as the DaemonSet runs it (its allocator's settings), reading its
/// input as `source` says, with `--dry-run --once` and no output.
pub(crate) fn spawn_agent(
    bin: &std::path::Path,
    node: &str,
    source: &[&std::ffi::OsStr],
) -> Result<std::process::Child, String> {
    Command::new(bin)
        .args(["agent", "--node-name", node])
        .args(source)
        .args([
            "--dry-run",
            "--once",
            "--status-address",
            "off",
            "--listen",
            "127.0.0.1:0",
        ])
        .envs(DAEMONSET_ENV)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("run {}: {e}", bin.display()))
}

/// What one run of an offline command measured.
#[derive(Clone, Debug)]
pub struct Run {
    /// Peak resident set size and wall-clock time.
    pub peak: Peak,
    /// CPU time (user and system) of the process, all its threads.
    pub cpu: Duration,
    /// When the first byte of its standard output arrived.
    pub first_byte: Option<Duration>,
    /// Bytes it wrote to standard output.
    pub bytes: u64,
    /// Its standard output, when asked to keep it.
    pub output: Vec<u8>,
}

/// Runs the release binary with `args` (an argument `{}` stands for `yaml`, written to a
/// temporary file), reading and counting its standard output: its peak, the time of its first
/// byte and its whole run; `keep`: its output too (for small outputs); `window`: killed after
/// that long, the figures those of the window (for a run too long to finish in a benchmark).
pub fn command_peak(
    yaml: &str,
    args: &[&str],
    keep: bool,
    window: Option<Duration>,
) -> Result<Run, String> {
    use std::io::Read;
    let bin = agent_binary()?;
    let file = std::env::temp_dir().join(format!("perf-budget-cmd-{}.yaml", std::process::id()));
    std::fs::write(&file, yaml).map_err(|e| format!("write {}: {e}", file.display()))?;
    let cpu_before = children_cpu();
    let started = Instant::now();
    let spawned = Command::new(&bin)
        .args(args.iter().map(|a| match *a {
            "{}" => file.as_os_str(),
            a => std::ffi::OsStr::new(a),
        }))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&file);
            return Err(format!("run {}: {e}", bin.display()));
        }
    };
    let reader = child.stdout.take().map(|mut out| {
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            let (mut first, mut bytes, mut kept) = (None, 0u64, Vec::new());
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                first.get_or_insert_with(|| started.elapsed());
                bytes += n as u64;
                if keep {
                    kept.extend_from_slice(&buf[..n]);
                }
            }
            (first, bytes, kept)
        })
    });
    let peak = watch(child, started, window);
    let _ = std::fs::remove_file(&file);
    let cpu = children_cpu().saturating_sub(cpu_before);
    let (first_byte, bytes, output) =
        reader
            .and_then(|r| r.join().ok())
            .unwrap_or((None, 0, Vec::new()));
    Ok(Run {
        peak: peak?,
        cpu,
        first_byte,
        bytes,
        output,
    })
}

/// User and system CPU time of every child this process has waited for.
fn children_cpu() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_CHILDREN)
        .map(|u| {
            let t = |tv: nix::sys::time::TimeVal| {
                Duration::new(
                    tv.tv_sec().max(0) as u64,
                    (tv.tv_usec().max(0) as u32).saturating_mul(1000),
                )
            };
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or_default()
}

/// Polls the child's `VmHWM` every millisecond until it exits, or until `window` has passed
/// (then it is killed, and its peak is that of the window).
pub(crate) fn watch(
    mut child: std::process::Child,
    started: Instant,
    window: Option<Duration>,
) -> Result<Peak, String> {
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let mut cut = false;
    let status = loop {
        if let Some(kib) = std::fs::read_to_string(&status_file)
            .ok()
            .as_deref()
            .and_then(vm_hwm_kib)
        {
            peak_kib = peak_kib.max(kib);
        }
        if !cut && window.is_some_and(|w| started.elapsed() > w) {
            cut = true;
            let _ = child.kill();
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(format!("wait: {e}")),
        }
    };
    let took = started.elapsed();
    // Exit 1: a result was written and some diagnostic reached --fail-on.
    if !cut && !matches!(status.code(), Some(0 | 1)) {
        return Err(format!("the binary failed ({status})"));
    }
    if peak_kib == 0 {
        return Err("no VmHWM was read from /proc".into());
    }
    Ok(Peak {
        bytes: peak_kib.saturating_mul(1024),
        took,
    })
}

/// `VmHWM:   12345 kB` from `/proc/PID/status`.
fn vm_hwm_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}
