//! The agent's background probes (`--probe-interval`): when to probe, what the last probe of
//! each link found, and — with `--underlay-from-probe` — the rule that lets a probed path lower
//! what the plan assumes (D13): the links to the peers found narrow, through the node's
//! `path-mtu` annotation, or the node's own underlay when every peer that answered is narrow by
//! the same amount (a narrow first hop). Lowered only, never raised by a probe, and each
//! lowering expires unless a new probe confirms it, so a repaired path recovers.

use mtu_solver::probe::{LinkProbe, Target, Verdict};
use std::collections::{BTreeMap, BTreeSet};
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
    /// The peers whose last probe answered.
    answered: BTreeSet<Arc<str>>,
}

/// What the probes lower in the next plan (`--underlay-from-probe`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Probed {
    /// The node's own underlay, when every peer that answered is narrow by the same amount.
    pub underlay: Option<u32>,
    /// Otherwise the narrow peers' path MTUs: the node's own `path-mtu` entries, peer → MTU.
    pub paths: BTreeMap<Arc<str>, u32>,
    /// Whether the agent owns its Node's `path-mtu` annotation: the entries above replace what
    /// the annotation says in the node's plan, and are published on it.
    pub owns_paths: bool,
    /// Until the agent adopted what its annotation said when it started
    /// ([`Lowerings::adopt`]), the published entries are kept beside the probed ones, so a
    /// restart raises nothing before a probe repaired it.
    pub keep_published: bool,
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
        if !probes.is_empty() {
            self.answered.clear();
        }
        for p in probes {
            let Some(probed) = p.probed_underlay else {
                continue;
            };
            let Some(t) = targets.iter().find(|t| t.peer == p.peer) else {
                continue;
            };
            self.answered.insert(p.peer.clone());
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

    /// Takes the node's published `path-mtu` entries (peer → MTU) as lowerings until
    /// `now + expiry`, for peers not already lowered: what an agent published before it
    /// restarted holds until a probe confirms or repairs it, as if it had never stopped.
    pub fn adopt(
        &mut self,
        published: &BTreeMap<String, u32>,
        base: u32,
        now: Instant,
        expiry: Duration,
    ) {
        for (peer, &underlay) in published {
            if underlay < base {
                self.by_peer
                    .entry(Arc::from(peer.as_str()))
                    .or_insert(Lowering {
                        underlay,
                        expires: now + expiry,
                    });
            }
        }
    }

    /// What the lowerings that have not expired lower below `base` (D13): the node's own
    /// underlay when at least two peers answered their last probe and every one of them is
    /// lowered to the same value (the narrow hop is the node's first, shared by every path);
    /// otherwise each lowered peer's path MTU, the node's underlay kept.
    pub fn probed(&self, base: u32, now: Instant) -> Probed {
        let live: BTreeMap<Arc<str>, u32> = self
            .by_peer
            .iter()
            .filter(|(_, l)| l.expires > now && l.underlay < base)
            .map(|(p, l)| (p.clone(), l.underlay))
            .collect();
        let mut values = live.values();
        let first = values.next().copied();
        let shared = self.answered.len() >= 2
            && self.answered.iter().all(|p| live.contains_key(p))
            && values.all(|v| Some(*v) == first);
        if shared {
            return Probed {
                underlay: first,
                paths: BTreeMap::new(),
                owns_paths: true,
                keep_published: false,
            };
        }
        Probed {
            underlay: None,
            paths: live,
            owns_paths: true,
            keep_published: false,
        }
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

    /// Per-pair entries, peer → MTU.
    fn paths(entries: &[(&str, u32)]) -> Probed {
        Probed {
            underlay: None,
            paths: entries.iter().map(|(p, m)| (Arc::from(*p), *m)).collect(),
            owns_paths: true,
            keep_published: false,
        }
    }

    /// The node's own underlay lowered.
    fn node_wide(u: u32) -> Probed {
        Probed {
            underlay: Some(u),
            paths: BTreeMap::new(),
            owns_paths: true,
            keep_published: false,
        }
    }

    #[test]
    fn a_narrow_path_to_one_peer_lowers_that_pair_and_a_repaired_path_restores_it() {
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
        assert_eq!(l.probed(1500, now), paths(&[("b", 1400)]), "c is ok");
        // The next plan takes 1400 for the pair: the same probe keeps it (no flapping).
        let b2 = target("b", 1500, 1400);
        let later = now + Duration::from_secs(300);
        l.record(
            1500,
            std::slice::from_ref(&b2),
            &[probed(&b2, Some(1400))],
            later,
            EXPIRY,
        );
        assert_eq!(l.probed(1500, later), paths(&[("b", 1400)]));
        // The path is repaired: the next probe finds 1500 and the lowering goes.
        let again = later + Duration::from_secs(300);
        l.record(
            1500,
            std::slice::from_ref(&b2),
            &[probed(&b2, Some(1500))],
            again,
            EXPIRY,
        );
        assert_eq!(l.probed(1500, again), paths(&[]));
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
        assert_eq!(l.probed(1400, now), paths(&[]));
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
        assert_eq!(l.probed(1500, now), paths(&[]));
        l.record(
            1500,
            std::slice::from_ref(&b),
            &[probed(&b, Some(1300))],
            now,
            EXPIRY,
        );
        assert_eq!(l.probed(1500, now), paths(&[("b", 1300)]));
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
        assert_eq!(l.probed(1500, soon), paths(&[("b", 1400)]));
        assert_eq!(l.next_expiry(), Some(now + EXPIRY));
        let expired = now + EXPIRY;
        assert_eq!(l.probed(1500, expired), paths(&[]));
        l.record(1500, &[], &[], expired, EXPIRY);
        assert_eq!(l.current(expired), BTreeMap::new());
    }

    #[test]
    fn different_narrow_paths_are_separate_pairs() {
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
        assert_eq!(l.probed(1500, now), paths(&[("b", 1400), ("c", 1300)]));
        assert_eq!(l.current(now).len(), 2);
    }

    /// Every peer that answered narrow by the same amount: the narrow hop is the node's own
    /// first hop, and the node's underlay is lowered instead of every pair; a peer that
    /// answered nothing does not count against it, and one peer alone cannot tell.
    #[test]
    fn the_same_narrow_path_to_every_peer_lowers_the_node() {
        let now = Instant::now();
        let mut l = Lowerings::default();
        let (b, c, d) = (
            target("b", 1500, 1500),
            target("c", 1500, 1500),
            target("d", 1500, 1500),
        );
        l.record(
            1500,
            &[b.clone(), c.clone(), d.clone()],
            &[
                probed(&b, Some(1400)),
                probed(&c, Some(1400)),
                probed(&d, None),
            ],
            now,
            EXPIRY,
        );
        assert_eq!(l.probed(1500, now), node_wide(1400));
        let mut one = Lowerings::default();
        one.record(
            1500,
            std::slice::from_ref(&b),
            &[probed(&b, Some(1400))],
            now,
            EXPIRY,
        );
        assert_eq!(one.probed(1500, now), paths(&[("b", 1400)]));
        // d answers at full size: only b and c are narrow.
        let later = now + Duration::from_secs(60);
        l.record(
            1500,
            &[b.clone(), c.clone(), d.clone()],
            &[
                probed(&b, Some(1400)),
                probed(&c, Some(1400)),
                probed(&d, Some(1500)),
            ],
            later,
            EXPIRY,
        );
        assert_eq!(l.probed(1500, later), paths(&[("b", 1400), ("c", 1400)]));
    }

    /// Entries published before a restart hold as lowerings until they expire, unless a probe
    /// already lowered the peer; entries at or above the node's underlay lower nothing.
    #[test]
    fn published_entries_are_adopted_until_they_expire() {
        let now = Instant::now();
        let mut l = Lowerings::default();
        let published: BTreeMap<String, u32> =
            [("b".to_string(), 1400), ("c".to_string(), 1500)].into();
        l.adopt(&published, 1500, now, EXPIRY);
        assert_eq!(l.probed(1500, now), paths(&[("b", 1400)]));
        assert_eq!(l.probed(1500, now + EXPIRY), paths(&[]));
    }

    #[test]
    fn link_changes_that_matter_to_a_probe() {
        let a = vec![target("b", 1500, 1500)];
        assert!(!links_changed(&a, &a.clone()));
        assert!(links_changed(&a, &[target("b", 1500, 1400)]));
        assert!(links_changed(&a, &[]));
    }
}
