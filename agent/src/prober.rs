//! Probing a node's links on the wire: a bounded pool of worker threads, each with its own
//! sockets, searches every link's underlay address and, where a tunnel answers, its peer's pod
//! gateway through the tunnel, at a bounded rate and within a total time bound.

use mtu_solver::probe::{Answer, LinkProbe, Measured, Search, Target, judge};
use probe_linux::{Method, Prober};
use std::collections::VecDeque;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The smallest size tried: every IPv4 path carries 576 bytes.
pub const MIN_PROBE: u32 = 576;

/// After a lost UDP probe, the next one to that peer waits this long: Linux answers UDP with
/// ICMP errors rate-limited per destination (a burst of 6, then one per second by default), so
/// retries sent faster would look lost when only the answer was withheld. Echo replies are not
/// rate-limited, so ICMP probes need no such pause.
pub const UDP_RECOVERY: Duration = Duration::from_secs(1);

/// How probes are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodChoice {
    /// ICMP echo when a raw socket can be opened (CAP_NET_RAW), else UDP.
    Auto,
    /// ICMP echo (CAP_NET_RAW).
    Icmp,
    /// UDP with the destination's port-unreachable as the answer (no privileges).
    Udp,
}

/// Settings of a probe run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// How probes are sent.
    pub method: MethodChoice,
    /// Probe from this network namespace (default: the current one).
    pub netns: Option<PathBuf>,
    /// Tries per size.
    pub attempts: u32,
    /// How long one probe waits for its answer.
    pub timeout: Duration,
    /// Pause between two probes of one worker (the rate limit: at most `concurrency` probes
    /// per interval).
    pub spacing: Duration,
    /// Links probed at the same time.
    pub concurrency: usize,
    /// Bound on the whole run; links not finished by then are reported as not answering.
    pub deadline: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            method: MethodChoice::Auto,
            netns: None,
            attempts: 3,
            timeout: Duration::from_millis(300),
            spacing: Duration::from_millis(10),
            concurrency: 8,
            deadline: Duration::from_secs(60),
        }
    }
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// No socket of the chosen method could be opened.
    #[error("cannot open probe sockets ({method}): {source}")]
    Open {
        /// The method.
        method: &'static str,
        /// The adapter's error.
        #[source]
        source: probe_linux::Error,
    },
}

/// The method a run uses: `Auto` is ICMP when a raw socket opens here, else UDP.
pub fn resolve_method(s: &Settings) -> Result<Method, ProbeError> {
    let open = |m: Method, name: &'static str| {
        Prober::open(m, s.netns.as_deref())
            .map(|_| m)
            .map_err(|source| ProbeError::Open {
                method: name,
                source,
            })
    };
    match s.method {
        MethodChoice::Icmp => open(Method::Icmp, "icmp"),
        MethodChoice::Udp => open(Method::Udp, "udp"),
        MethodChoice::Auto => open(Method::Icmp, "icmp").or_else(|_| open(Method::Udp, "udp")),
    }
}

/// Probes every target and judges it, `concurrency` links at a time. The result is in the
/// targets' order.
pub fn probe_links(targets: &[Target], s: &Settings) -> Result<Vec<LinkProbe>, ProbeError> {
    let method = resolve_method(s)?;
    let deadline = Instant::now() + s.deadline;
    let queue: Arc<Mutex<VecDeque<(usize, Target)>>> =
        Arc::new(Mutex::new(targets.iter().cloned().enumerate().collect()));
    let results: Arc<Mutex<Vec<Option<LinkProbe>>>> =
        Arc::new(Mutex::new(vec![None; targets.len()]));
    let workers = s.concurrency.clamp(1, targets.len().max(1));
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let (queue, results, s) = (queue.clone(), results.clone(), s.clone());
            std::thread::spawn(move || worker(method, &s, deadline, &queue, &results))
        })
        .collect();
    for h in handles {
        // A worker that failed to open its sockets leaves its links to the others; a panic
        // leaves them unanswered below.
        let _ = h.join();
    }
    let mut results = std::mem::take(&mut *results.lock().unwrap_or_else(PoisonError::into_inner));
    Ok(targets
        .iter()
        .zip(results.iter_mut())
        .map(|(t, r)| r.take().unwrap_or_else(|| judge(t, Measured::default())))
        .collect())
}

/// One worker: its own sockets, links from the queue until it is empty.
fn worker(
    method: Method,
    s: &Settings,
    deadline: Instant,
    queue: &Mutex<VecDeque<(usize, Target)>>,
    results: &Mutex<Vec<Option<LinkProbe>>>,
) {
    let Ok(mut prober) = Prober::open(method, s.netns.as_deref()) else {
        return;
    };
    loop {
        let next = queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        let Some((i, target)) = next else { return };
        let probed = probe_link(&mut prober, &target, s, deadline);
        if let Some(slot) = results
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(i)
        {
            *slot = Some(probed);
        }
    }
}

/// Searches one link: its underlay address from 576 to the local device's MTU (or the planned
/// underlay, when larger), expecting the planned underlay; then, when the underlay answered,
/// its peer's pod gateway through the tunnel up to the link MTU plus one, expecting the link
/// MTU.
pub fn probe_link(
    prober: &mut Prober,
    target: &Target,
    s: &Settings,
    deadline: Instant,
) -> LinkProbe {
    let mut measured = Measured::default();
    let mut pace = Pace {
        spacing: s.spacing,
        after_loss: if prober.method() == Method::Udp {
            UDP_RECOVERY.max(s.spacing)
        } else {
            s.spacing
        },
        last_lost: false,
    };
    if let Some(addr) = target.address {
        let device = prober.local_mtu(addr).unwrap_or(target.planned_underlay);
        let found = Search {
            min: MIN_PROBE,
            max: device.max(target.planned_underlay),
            attempts: s.attempts,
            expect: Some(target.planned_underlay),
        }
        .run(|size| send(prober, &mut pace, addr, size, s.timeout, deadline));
        measured.underlay = found.largest;
        measured.probes = found.probes;
    }
    if let (Some(_), Some(gw)) = (measured.underlay, target.tunnel_address) {
        let found = Search {
            min: MIN_PROBE.min(target.link_mtu),
            max: target.link_mtu.saturating_add(1),
            attempts: s.attempts,
            expect: Some(target.link_mtu),
        }
        .run(|size| send(prober, &mut pace, gw, size, s.timeout, deadline));
        measured.link = found.largest;
        measured.probes = measured.probes.saturating_add(found.probes);
    }
    judge(target, measured)
}

/// The pause before each probe of one link.
struct Pace {
    spacing: Duration,
    /// The pause after a lost probe.
    after_loss: Duration,
    last_lost: bool,
}

/// One rate-limited probe; past the deadline nothing is sent and the probe counts as lost.
fn send(
    prober: &mut Prober,
    pace: &mut Pace,
    to: IpAddr,
    size: u32,
    timeout: Duration,
    deadline: Instant,
) -> Answer {
    if Instant::now() >= deadline {
        return Answer::Lost;
    }
    std::thread::sleep(if pace.last_lost {
        pace.after_loss
    } else {
        pace.spacing
    });
    let answer = match prober.probe(to, size, timeout) {
        Ok(probe_linux::Answer::Answered) => Answer::Answered,
        Ok(probe_linux::Answer::TooBig) => Answer::TooBig,
        Ok(probe_linux::Answer::Lost) | Err(_) => Answer::Lost,
    };
    pace.last_lost = answer == Answer::Lost;
    answer
}
