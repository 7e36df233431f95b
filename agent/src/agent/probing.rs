//! The agent's background probes (`--probe-interval`): when to probe, what the last probe of
//! each link found, and — with `--underlay-from-probe` — the rule that lets a probed underlay
//! lower the node's own: lowered only, never raised by a probe, and each lowering expires
//! unless a new probe confirms it, so a repaired path recovers.

use mtu_solver::probe::{LinkProbe, Target, Verdict};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// A probed underlay towards one peer, below what the plan assumed without probes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lowering {
    /// The probed underlay.
    pub underlay: u32,
    /// Until when it holds without a new probe.
    pub expires: Instant,
}

/// The lowerings by peer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lowerings {
    by_peer: BTreeMap<Arc<str>, Lowering>,
}

impl Lowerings {
    /// Records a probe run. `base` is the node's own underlay before any probe lowered it (as
    /// stated or detected); `targets` the links probed, with what the plan took for each peer.
    /// A link whose probed underlay is below `min(base, U(peer))` lowers the node's underlay
    /// towards that value until `now + expiry`; a link probed at or above it drops its
    /// lowering (the path was repaired); a link that answered nothing keeps what it had until
    /// it expires.
    pub fn record(
        &mut self,
        base: u32,
        targets: &[Target],
        probes: &[LinkProbe],
        now: Instant,
        expiry: Duration,
    ) {
        for p in probes {
            let Some(probed) = p.probed_underlay else {
                continue;
            };
            let Some(t) = targets.iter().find(|t| t.peer == p.peer) else {
                continue;
            };
            if probed < base.min(t.peer_underlay) {
                self.by_peer.insert(
                    p.peer.clone(),
                    Lowering {
                        underlay: probed,
                        expires: now + expiry,
                    },
                );
            } else {
                self.by_peer.remove(&p.peer);
            }
        }
        self.by_peer.retain(|_, l| l.expires > now);
    }

    /// The node's underlay: `base`, lowered by the lowest probed underlay that has not
    /// expired; with the peer whose probe lowered it.
    pub fn effective(&self, base: u32, now: Instant) -> (u32, Option<Arc<str>>) {
        self.by_peer
            .iter()
            .filter(|(_, l)| l.expires > now && l.underlay < base)
            .min_by_key(|(_, l)| l.underlay)
            .map_or((base, None), |(p, l)| (l.underlay, Some(p.clone())))
    }

    /// The earliest expiry (when the effective value may rise again).
    pub fn next_expiry(&self) -> Option<Instant> {
        self.by_peer.values().map(|l| l.expires).min()
    }

    /// The current lowerings, for `/status`: peer → underlay.
    pub fn current(&self, now: Instant) -> BTreeMap<String, u32> {
        self.by_peer
            .iter()
            .filter(|(_, l)| l.expires > now)
            .map(|(p, l)| (p.to_string(), l.underlay))
            .collect()
    }
}

/// The last probe run.
#[derive(Clone, Debug)]
pub struct LastRun {
    /// When it finished.
    pub at: SystemTime,
    /// How long it took.
    pub took: Duration,
    /// Per link.
    pub links: Vec<LinkProbe>,
}

impl LastRun {
    /// Links whose path carries less than the plan sends.
    pub fn black_holes(&self) -> usize {
        self.links
            .iter()
            .filter(|l| l.verdict == Verdict::BlackHole)
            .count()
    }
}

/// Whether a new plan's links differ from the last probed ones in anything a probe measures.
pub fn links_changed(before: &[Target], after: &[Target]) -> bool {
    let key = |t: &Target| {
        (
            t.peer.clone(),
            t.address,
            t.tunnel_address,
            t.planned_underlay,
            t.link_mtu,
        )
    };
    before.len() != after.len() || before.iter().zip(after).any(|(a, b)| key(a) != key(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mtu_solver::probe::{Measured, judge};
    use topology_core::vocab::Protocol;

    fn target(peer: &str, peer_underlay: u32, own: u32) -> Target {
        let planned = own.min(peer_underlay);
        Target {
            peer: peer.into(),
            address: Some("192.0.2.1".parse().unwrap()),
            tunnel_address: None,
            device: Some("vxlan0".into()),
            protocol: Protocol::Vxlan,
            overhead: 50,
            planned_underlay: planned,
            node_underlay: own,
            peer_underlay,
            link_mtu: planned - 50,
            underlay_term: String::new(),
            link_term: String::new(),
        }
    }

    fn probed(t: &Target, underlay: Option<u32>) -> LinkProbe {
        judge(
            t,
            Measured {
                underlay,
                link: None,
                probes: 1,
            },
        )
    }

    const EXPIRY: Duration = Duration::from_secs(900);

    #[test]
    fn a_probe_below_the_plan_lowers_the_underlay_and_a_repaired_path_restores_it() {
        let now = Instant::now();
        let mut l = Lowerings::default();
        let b = target("b", 1500, 1500);
        let c = target("c", 1500, 1500);
        l.record(
            1500,
            &[b.clone(), c.clone()],
            &[probed(&b, Some(1400)), probed(&c, Some(1500))],
            now,
            EXPIRY,
        );
        assert_eq!(l.effective(1500, now), (1400, Some("b".into())));
        // The next plan takes 1400 for the node: the same probe keeps it (no flapping).
        let b2 = target("b", 1500, 1400);
        let later = now + Duration::from_secs(300);
        l.record(
            1500,
            std::slice::from_ref(&b2),
            &[probed(&b2, Some(1400))],
            later,
            EXPIRY,
        );
        assert_eq!(l.effective(1500, later).0, 1400);
        // The path is repaired: the next probe finds 1500 and the lowering goes.
        let again = later + Duration::from_secs(300);
        l.record(
            1500,
            std::slice::from_ref(&b2),
            &[probed(&b2, Some(1500))],
            again,
            EXPIRY,
        );
        assert_eq!(l.effective(1500, again), (1500, None));
    }

    #[test]
    fn a_probe_never_raises_the_underlay() {
        let now = Instant::now();
        let mut l = Lowerings::default();
        let b = target("b", 1500, 1400);
        // The path carries more than the stated 1400: nothing changes.
        l.record(
            1400,
            std::slice::from_ref(&b),
            &[probed(&b, Some(1500))],
            now,
            EXPIRY,
        );
        assert_eq!(l.effective(1400, now), (1400, None));
    }

    #[test]
    fn a_peer_with_a_small_underlay_of_its_own_does_not_lower_the_node() {
        // The peer says 1400 itself: a 1400 path towards it is what the plan assumed.
        let now = Instant::now();
        let mut l = Lowerings::default();
        let b = target("b", 1400, 1500);
        l.record(
            1500,
            std::slice::from_ref(&b),
            &[probed(&b, Some(1400))],
            now,
            EXPIRY,
        );
        assert_eq!(l.effective(1500, now), (1500, None));
        l.record(
            1500,
            std::slice::from_ref(&b),
            &[probed(&b, Some(1300))],
            now,
            EXPIRY,
        );
        assert_eq!(l.effective(1500, now).0, 1300);
    }

    #[test]
    fn lowerings_expire_and_unanswered_probes_keep_them_until_then() {
        let now = Instant::now();
        let mut l = Lowerings::default();
        let b = target("b", 1500, 1500);
        l.record(
            1500,
            std::slice::from_ref(&b),
            &[probed(&b, Some(1400))],
            now,
            EXPIRY,
        );
        let soon = now + Duration::from_secs(60);
        l.record(
            1500,
            std::slice::from_ref(&b),
            &[probed(&b, None)],
            soon,
            EXPIRY,
        );
        assert_eq!(l.effective(1500, soon).0, 1400);
        assert_eq!(l.next_expiry(), Some(now + EXPIRY));
        let expired = now + EXPIRY;
        assert_eq!(l.effective(1500, expired), (1500, None));
        l.record(1500, &[], &[], expired, EXPIRY);
        assert_eq!(l.current(expired), BTreeMap::new());
    }

    #[test]
    fn the_lowest_lowering_counts() {
        let now = Instant::now();
        let mut l = Lowerings::default();
        let (b, c) = (target("b", 1500, 1500), target("c", 1500, 1500));
        l.record(
            1500,
            &[b.clone(), c.clone()],
            &[probed(&b, Some(1400)), probed(&c, Some(1300))],
            now,
            EXPIRY,
        );
        assert_eq!(l.effective(1500, now), (1300, Some("c".into())));
        assert_eq!(l.current(now).len(), 2);
    }

    #[test]
    fn link_changes_that_matter_to_a_probe() {
        let a = vec![target("b", 1500, 1500)];
        assert!(!links_changed(&a, &a.clone()));
        assert!(links_changed(&a, &[target("b", 1500, 1400)]));
        assert!(links_changed(&a, &[]));
    }
}
