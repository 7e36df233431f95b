//! Real-kernel tests in the private lab of `common::Lab` (root only; skipped with a printed
//! reason otherwise). Run: `cargo test -p probe-linux --features netns-tests -- --test-threads=1`.
//!
//! Every test runs for both methods: ICMP echo on raw sockets and UDP answered by the
//! destination's port unreachable.
#![cfg(feature = "netns-tests")]

mod common;

use std::net::IpAddr;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use probe_linux::{Answer, Error, Method, Prober};

/// `b`, behind the routers' 1400-byte link.
const B: &str = "10.0.3.2";
/// `c`, reached over 1500-byte links only.
const C: &str = "10.0.5.2";
/// An address nobody holds: `r1` drops it into a blackhole route, silently.
const VOID: &str = "10.99.0.1";
const B6: &str = "fd00:3::2";

/// Long enough for an answer on a loaded machine; answered probes return as soon as it comes.
const ANSWER: Duration = Duration::from_secs(3);
/// The wait of probes expected to be lost.
const LOST: Duration = Duration::from_millis(400);

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Probes and prints what happened and how long it took.
fn probe(p: &mut Prober, dst: &str, size: u32, timeout: Duration) -> (Answer, Duration) {
    let start = Instant::now();
    let answer = p
        .probe(ip(dst), size, timeout)
        .unwrap_or_else(|e| panic!("probe {dst} {size}: {e}"));
    let took = start.elapsed();
    println!(
        "{:?} {dst} {size} (timeout {timeout:?}): {answer:?} in {took:?}",
        p.method()
    );
    (answer, took)
}

/// The inode of the calling thread's network namespace.
fn own_netns() -> String {
    std::fs::read_link("/proc/thread-self/ns/net")
        .expect("read own namespace")
        .display()
        .to_string()
}

/// Test 1: the path MTU towards `b` is 1400 although every device on both nodes says 1500,
/// and no ICMP error tells the sender.
fn finds_the_black_hole(method: Method) {
    let lab = lab_or_skip!(format!("finds_the_black_hole {method:?}"), false);
    let mut p = Prober::open(method, Some(&lab.a.path())).expect("open prober");
    assert_eq!(p.local_mtu(ip(B)).expect("local MTU"), 1500);

    assert_eq!(probe(&mut p, B, 1400, ANSWER).0, Answer::Answered);
    let (lost, took) = probe(&mut p, B, 1401, LOST);
    assert_eq!(lost, Answer::Lost);
    assert!(took >= LOST, "{took:?}");
    assert_eq!(probe(&mut p, B, 576, ANSWER).0, Answer::Answered);
    assert_eq!(probe(&mut p, B, 1500, LOST).0, Answer::Lost);
    let (too_big, took) = probe(&mut p, B, 1501, ANSWER);
    assert_eq!(too_big, Answer::TooBig);
    assert!(
        took < Duration::from_millis(100),
        "refused locally: {took:?}"
    );
    assert_eq!(probe(&mut p, B, 9000, ANSWER).0, Answer::TooBig);
    // Still 1500: probes ignore the cache and nothing was learned from the wire.
    assert_eq!(p.local_mtu(ip(B)).expect("local MTU"), 1500);

    // A stale answer: a 1400 probe given no time leaves its answer to arrive later (or finds
    // it at once); the 1401 probe after it must not take that answer for its own.
    let _ = probe(&mut p, B, 1400, Duration::ZERO);
    assert_eq!(probe(&mut p, B, 1401, LOST).0, Answer::Lost);
    assert_eq!(probe(&mut p, B, 1400, ANSWER).0, Answer::Answered);
    assert_eq!(probe(&mut p, B, 1401, LOST).0, Answer::Lost);
}

#[test]
fn icmp_finds_the_black_hole() {
    require_root!("icmp_finds_the_black_hole");
    finds_the_black_hole(Method::Icmp);
}

#[test]
fn udp_finds_the_black_hole() {
    require_root!("udp_finds_the_black_hole");
    finds_the_black_hole(Method::Udp);
}

/// Bytes `b` has sent through its `eth0` qdisc so far (Ethernet headers included).
fn sent_by_b(lab: &common::Lab) -> u64 {
    let out = lab.b.sh("tc -s qdisc show dev eth0");
    out.split_whitespace()
        .skip_while(|w| *w != "Sent")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no packet count in {out}"))
}

/// Test 1, continued: an answer that arrives late, while the next probe waits, is not that
/// probe's answer. `b`'s answers leave through a token bucket of 1,000 bytes per second, so
/// once its burst is spent an answer waits up to 1.4 s in the queue: the probe it answers has
/// given up (lost), and it arrives during the next one, a 1401 that must stay lost.
fn a_late_answer_does_not_count(method: Method) {
    let lab = lab_or_skip!(format!("a_late_answer_does_not_count {method:?}"), false);
    if let Err(e) = lab
        .b
        .check("tc qdisc add dev eth0 root tbf rate 8kbit burst 1600 latency 10s")
    {
        test_utils::netns::skip(
            &format!("a_late_answer_does_not_count {method:?}"),
            &format!("no token bucket qdisc: {e}"),
        );
        return;
    }
    let mut p = Prober::open(method, Some(&lab.a.path())).expect("open prober");
    assert_eq!(probe(&mut p, B, 1400, ANSWER).0, Answer::Answered);
    // Spend the burst until an answer is held back.
    let held =
        (0..10).any(|_| probe(&mut p, B, 1400, Duration::from_millis(100)).0 == Answer::Lost);
    assert!(held, "no answer was held back by the token bucket");
    let before = sent_by_b(&lab);
    let (answer, took) = probe(&mut p, B, 1401, Duration::from_secs(2));
    let sent = sent_by_b(&lab) - before;
    println!("{sent} bytes from b arrived while the 1401 probe waited {took:?}");
    // An echo reply is 1400 bytes, a port unreachable 576 (it quotes what fits in 576); the
    // rest of what `b` sends (neighbour and multicast chatter) is far smaller.
    assert!(
        sent >= 576,
        "the held answer did not arrive during the 1401 probe"
    );
    assert_eq!(
        answer,
        Answer::Lost,
        "a late answer to a 1400 probe counted for a 1401 one"
    );
}

#[test]
fn icmp_a_late_answer_does_not_count() {
    require_root!("icmp_a_late_answer_does_not_count");
    a_late_answer_does_not_count(Method::Icmp);
}

#[test]
fn udp_a_late_answer_does_not_count() {
    require_root!("udp_a_late_answer_does_not_count");
    a_late_answer_does_not_count(Method::Udp);
}

/// Test 2: an address nobody answers for is lost after the timeout, not much later.
fn the_void_is_lost_in_the_timeout(method: Method) {
    let lab = lab_or_skip!(format!("the_void_is_lost_in_the_timeout {method:?}"), false);
    let mut p = Prober::open(method, Some(&lab.a.path())).expect("open prober");
    for timeout in [Duration::from_millis(200), Duration::from_millis(700)] {
        let (answer, took) = probe(&mut p, VOID, 1000, timeout);
        assert_eq!(answer, Answer::Lost);
        assert!(took >= timeout, "{took:?} < {timeout:?}");
        assert!(
            took < timeout + Duration::from_millis(150),
            "{took:?} for a timeout of {timeout:?}"
        );
    }
    // No time at all: one look, then lost.
    let (answer, took) = probe(&mut p, VOID, 1000, Duration::ZERO);
    assert_eq!(answer, Answer::Lost);
    assert!(took < Duration::from_millis(50), "{took:?}");
}

#[test]
fn icmp_the_void_is_lost_in_the_timeout() {
    require_root!("icmp_the_void_is_lost_in_the_timeout");
    the_void_is_lost_in_the_timeout(Method::Icmp);
}

#[test]
fn udp_the_void_is_lost_in_the_timeout() {
    require_root!("udp_the_void_is_lost_in_the_timeout");
    the_void_is_lost_in_the_timeout(Method::Udp);
}

/// Test 3: a prober opened for another namespace probes from there, and the calling thread
/// stays in its own namespace.
fn probes_from_another_namespace(method: Method) {
    let lab = lab_or_skip!(format!("probes_from_another_namespace {method:?}"), false);
    let before = own_netns();
    let mut p = Prober::open(method, Some(&lab.a.path())).expect("open prober");
    assert_eq!(
        own_netns(),
        before,
        "the calling thread's namespace changed"
    );
    // Only `a` has these routes: an answer proves the sockets live there.
    assert_eq!(probe(&mut p, B, 1400, ANSWER).0, Answer::Answered);
    assert_eq!(probe(&mut p, C, 1500, ANSWER).0, Answer::Answered);
    assert_eq!(p.local_mtu(ip(C)).expect("local MTU"), 1500);
    assert_eq!(own_netns(), before);
    // From a worker thread, which never entered the namespace either.
    let worker = std::thread::spawn(move || {
        let mine = own_netns();
        let answer = probe(&mut p, B, 1400, ANSWER).0;
        (answer, mine == own_netns())
    });
    let (answer, same) = worker.join().expect("worker");
    assert_eq!(answer, Answer::Answered);
    assert!(same);

    // The namespace file must exist and be a namespace.
    let missing = Prober::open(method, Some(std::path::Path::new("/run/netns/pl-none")));
    assert!(
        matches!(missing, Err(Error::OpenNetns { .. })),
        "{missing:?}"
    );
}

#[test]
fn icmp_probes_from_another_namespace() {
    require_root!("icmp_probes_from_another_namespace");
    probes_from_another_namespace(Method::Icmp);
}

#[test]
fn udp_probes_from_another_namespace() {
    require_root!("udp_probes_from_another_namespace");
    probes_from_another_namespace(Method::Udp);
}

/// Test 4: probers on threads of their own at the same time. The first alternates `b` at 1400
/// (answered) and 1450 (lost: over the inner link) while the second probes `c` at 1450 and the
/// third `b` at 1400, both answered, paced so their answers arrive while the first waits for its
/// lost probes: it sees them all on its raw socket (same size from `c`, same source from `b`)
/// and must take none of them; they must not take each other's either.
fn concurrent_probers_keep_their_answers(method: Method) {
    let lab = lab_or_skip!(
        format!("concurrent_probers_keep_their_answers {method:?}"),
        false
    );
    let start = Arc::new(Barrier::new(3));
    let spawn = |dst: &'static str, plan: Vec<(u32, Duration)>, pause: Duration| {
        let mut p = Prober::open(method, Some(&lab.a.path())).expect("open prober");
        let start = Arc::clone(&start);
        std::thread::spawn(move || {
            start.wait();
            let mut got = Vec::new();
            for (size, timeout) in plan {
                got.push((size, probe(&mut p, dst, size, timeout).0));
                std::thread::sleep(pause);
            }
            got
        })
    };
    let rounds = 4;
    let alternating = (0..rounds)
        .flat_map(|_| [(1400, ANSWER), (1450, LOST)])
        .collect();
    let x = spawn(B, alternating, Duration::ZERO);
    // About as long as the first prober's rounds (4 x 400 ms lost).
    let y = spawn(C, vec![(1450, ANSWER); 30], Duration::from_millis(50));
    let z = spawn(B, vec![(1400, ANSWER); 30], Duration::from_millis(50));
    let x = x.join().expect("prober of b at 1400 and 1450");
    let y = y.join().expect("prober of c");
    let z = z.join().expect("prober of b at 1400");
    let want_x: Vec<_> = (0..rounds)
        .flat_map(|_| [(1400, Answer::Answered), (1450, Answer::Lost)])
        .collect();
    assert_eq!(x, want_x);
    assert_eq!(y, vec![(1450, Answer::Answered); 30]);
    assert_eq!(z, vec![(1400, Answer::Answered); 30]);
}

#[test]
fn icmp_concurrent_probers_keep_their_answers() {
    require_root!("icmp_concurrent_probers_keep_their_answers");
    concurrent_probers_keep_their_answers(Method::Icmp);
}

#[test]
fn udp_concurrent_probers_keep_their_answers() {
    require_root!("udp_concurrent_probers_keep_their_answers");
    concurrent_probers_keep_their_answers(Method::Udp);
}

/// Test 5: test 1 over IPv6 (no fragmentation by routers at all; the minimum MTU is 1280).
fn finds_the_black_hole_v6(method: Method) {
    let lab = lab_or_skip!(format!("finds_the_black_hole_v6 {method:?}"), true);
    let mut p = Prober::open(method, Some(&lab.a.path())).expect("open prober");
    assert_eq!(p.local_mtu(ip(B6)).expect("local MTU"), 1500);
    // The first packet waits for neighbour discovery on every hop.
    assert_eq!(probe(&mut p, B6, 1280, ANSWER).0, Answer::Answered);
    assert_eq!(probe(&mut p, B6, 1400, ANSWER).0, Answer::Answered);
    assert_eq!(probe(&mut p, B6, 1401, LOST).0, Answer::Lost);
    assert_eq!(probe(&mut p, B6, 1500, LOST).0, Answer::Lost);
    assert_eq!(probe(&mut p, B6, 1501, ANSWER).0, Answer::TooBig);
    let _ = probe(&mut p, B6, 1400, Duration::ZERO);
    assert_eq!(probe(&mut p, B6, 1401, LOST).0, Answer::Lost);
    assert_eq!(probe(&mut p, B6, 1400, ANSWER).0, Answer::Answered);
    assert_eq!(probe(&mut p, "fd00:99::1", 1280, LOST).0, Answer::Lost);
    assert_eq!(p.local_mtu(ip(B6)).expect("local MTU"), 1500);
    let small = p.probe(ip(B6), 47, ANSWER);
    assert!(
        matches!(small, Err(Error::Size { min: 48, .. })),
        "{small:?}"
    );
}

#[test]
fn icmp_finds_the_black_hole_v6() {
    require_root!("icmp_finds_the_black_hole_v6");
    finds_the_black_hole_v6(Method::Icmp);
}

#[test]
fn udp_finds_the_black_hole_v6() {
    require_root!("udp_finds_the_black_hole_v6");
    finds_the_black_hole_v6(Method::Udp);
}
