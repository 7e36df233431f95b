//! Helpers for the real-kernel tests: whether they can run here, and the lab of `netns.rs`
//! (two nodes, two routers with a narrower link between them, routers that send no ICMP
//! errors).
#![allow(dead_code)]

pub use test_utils::netns::Ns;

/// Whether real-kernel tests can run here (root, network namespaces); prints the reason when
/// not.
pub fn can_run(test: &str) -> bool {
    test_utils::netns::can_run(test, &[])
}

/// Skips the calling test with a reason when real-kernel tests cannot run.
#[macro_export]
macro_rules! require_root {
    ($name:expr) => {
        if !common::can_run($name) {
            return;
        }
    };
}

/// The lab:
///
/// ```text
///  a (10.0.1.1) ── r1 ══ r2 ── b (10.0.3.2)
///       1500       │  1400   1500
///                  └── c (10.0.5.2)   1500
/// ```
///
/// Every device says 1500 except both ends of the routers' inner link (1400), so a path MTU of
/// 1400 towards `b` is visible only on the wire; `c` is reached without crossing it. The
/// routers forward but their own ICMP errors go into a blackhole policy rule, so "fragmentation
/// needed" / "packet too big" never come back: an MTU black hole. `r1` drops 10.99.0.0/24
/// (fd00:99::/64) silently into a blackhole route. `b` and `c` answer without ICMP rate limits.
/// With IPv6, each link also carries fd00:N::/64 (N the IPv4 third octet).
pub struct Lab {
    pub a: Ns,
    pub r1: Ns,
    pub r2: Ns,
    pub b: Ns,
    pub c: Ns,
}

impl Lab {
    /// Builds the IPv4 lab (and IPv6 when `v6`), or says why it cannot be built here.
    pub fn new(v6: bool) -> Result<Lab, String> {
        let lab = Lab {
            a: Ns::new("a"),
            r1: Ns::new("r1"),
            r2: Ns::new("r2"),
            b: Ns::new("b"),
            c: Ns::new("c"),
        };
        if v6 {
            for ns in lab.all() {
                ns.check(
                    "sysctl -qw net.ipv6.conf.all.disable_ipv6=0 \
                     net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0",
                )
                .map_err(|e| format!("no IPv6 here: {e}"))?;
            }
        }
        // Links: one end, its device, the subnet's third octet, its host number; the other
        // end, its device, its host number; the MTU of both ends.
        let links = [
            (&lab.a, "eth0", 1, 1, &lab.r1, "r1a", 2, 1500),
            (&lab.r1, "r1b", 2, 1, &lab.r2, "r2a", 2, 1400),
            (&lab.r2, "r2b", 3, 1, &lab.b, "eth0", 2, 1500),
            (&lab.r1, "r1c", 5, 1, &lab.c, "eth0", 2, 1500),
        ];
        for (x, xdev, net, xhost, y, ydev, yhost, mtu) in links {
            x.sh(&format!(
                "ip link add {xdev} mtu {mtu} type veth peer name {ydev} mtu {mtu} netns {}",
                y.name
            ));
            for (ns, dev, host) in [(x, xdev, xhost), (y, ydev, yhost)] {
                ns.sh(&format!(
                    "ip addr add 10.0.{net}.{host}/24 dev {dev} && ip link set {dev} up"
                ));
                if v6 {
                    ns.check(&format!(
                        "ip -6 addr add fd00:{net}::{host}/64 dev {dev} nodad"
                    ))?;
                }
            }
        }
        let routes4 = [
            (&lab.a, "default via 10.0.1.2"),
            (&lab.b, "default via 10.0.3.1"),
            (&lab.c, "default via 10.0.5.1"),
            (&lab.r1, "10.0.3.0/24 via 10.0.2.2"),
            (&lab.r1, "blackhole 10.99.0.0/24"),
            (&lab.r2, "default via 10.0.2.1"),
        ];
        for (ns, r) in routes4 {
            ns.sh(&format!("ip route add {r}"));
        }
        if v6 {
            let routes6 = [
                (&lab.a, "default via fd00:1::2"),
                (&lab.b, "default via fd00:3::1"),
                (&lab.c, "default via fd00:5::1"),
                (&lab.r1, "fd00:3::/64 via fd00:2::2"),
                (&lab.r1, "blackhole fd00:99::/64"),
                (&lab.r2, "default via fd00:2::1"),
            ];
            for (ns, r) in routes6 {
                ns.check(&format!("ip -6 route add {r}"))?;
            }
        }
        for r in [&lab.r1, &lab.r2] {
            r.sh("sysctl -qw net.ipv4.ip_forward=1");
            r.check("ip rule add iif lo ipproto icmp blackhole")
                .map_err(|e| format!("cannot drop the routers' ICMP errors: {e}"))?;
            if v6 {
                r.check("sysctl -qw net.ipv6.conf.all.forwarding=1")?;
                r.check("ip -6 rule add iif lo ipproto ipv6-icmp blackhole")
                    .map_err(|e| format!("cannot drop the routers' ICMPv6 errors: {e}"))?;
            }
        }
        for n in [&lab.b, &lab.c] {
            n.sh("sysctl -qw net.ipv4.icmp_ratelimit=0");
            if v6 {
                n.check("sysctl -qw net.ipv6.icmp.ratelimit=0")?;
            }
        }
        Ok(lab)
    }

    fn all(&self) -> [&Ns; 5] {
        [&self.a, &self.r1, &self.r2, &self.b, &self.c]
    }
}

/// Builds the lab or prints why the calling test skips.
#[macro_export]
macro_rules! lab_or_skip {
    ($name:expr, $v6:expr) => {
        match common::Lab::new($v6) {
            Ok(lab) => lab,
            Err(why) => {
                test_utils::netns::skip(&$name, &why);
                return;
            }
        }
    };
}
