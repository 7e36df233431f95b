//! The terms of a link: underlays (`U(n)`, from an override, the annotation, the maximum or
//! the default), the auto term `min(U(a), U(b)) − O(protocol, outer family)` memoized per node,
//! protocol and column, the pair's probed path MTU `P(a,b) − O` as its own term (D13), the
//! agent's `mtu`, a link's MTU from them and its caps, and the device that carries it. Also the terms of a delivery no link carries yet (a gateway's published
//! value for a Site without workers): `U(n) − O` and the protocol that delivery would take.

use super::Solver;
use crate::explain::{ExplId, Leaf, Minus, UnderlaySource};
use crate::overhead::overhead;
use crate::plan::DeviceRef;
use smallvec::SmallVec;
use topology_core::ids::{NodeId, SiteId};
use topology_core::mtu::{MIN_MTU, Mtu, UnderlayMtu};
use topology_core::net::Link;
use topology_core::vocab::Protocol;

impl Solver<'_> {
    /// `U(n)` and where it came from: the settings' override, else the `underlay-mtu` annotation,
    /// else the default; `underlay-mtu-max` lowers the first two and, alone, replaces the
    /// default. Costs a look-up once the node's is memoized; the first call reads its
    /// annotations and the settings.
    ///
    /// ```
    /// use mtu_solver::{Resolver, Settings, doc_cluster::TWO_SITES, explain::UnderlaySource, load};
    /// let underlay_overrides = [("wb".into(), 9000)].into();
    /// let settings = Settings { underlay_overrides, ..Settings::default() };
    /// let resolver = Resolver::new(load::from_sources([("cluster.yaml", TWO_SITES)]), settings);
    /// let [wa, wb] = resolver.with_solver(|solver| {
    ///     let topo = solver.topo();
    ///     ["wa", "wb"].map(|n| solver.underlay(topo.find_node(n).expect("a node")))
    /// });
    /// assert_eq!((wa.0.get(), wa.1), (1500, UnderlaySource::Default));
    /// assert_eq!((wb.0.get(), wb.1), (9000, UnderlaySource::Override));
    /// ```
    pub fn underlay(&mut self, n: NodeId) -> (UnderlayMtu, UnderlaySource) {
        if let Some(x) = self.underlays.get(n.idx()) {
            let (u, s) = unpack_underlay(x);
            return (UnderlayMtu::or_min(u), s);
        }
        let node = self.topo().node(n);
        let given = self
            .settings
            .underlay_overrides
            .get(&*node.name)
            .map(|v| (*v, UnderlaySource::Override))
            .or_else(|| {
                node.underlay.as_ref().map(|u| {
                    let src = if u.invalid.is_some() {
                        UnderlaySource::Invalid
                    } else {
                        UnderlaySource::Annotation
                    };
                    (u.mtu, src)
                })
            });
        let max = node.underlay_max.as_ref().map(|u| {
            let src = if u.invalid.is_some() {
                UnderlaySource::Invalid
            } else {
                UnderlaySource::Max
            };
            (u.mtu, src)
        });
        let v = match (given, max) {
            (Some(g), Some(m)) => {
                if m.0 < g.0 {
                    m
                } else {
                    g
                }
            }
            (Some(g), None) => g,
            (None, Some(m)) => m,
            (None, None) => (
                self.settings.default_underlay.max(MIN_MTU),
                UnderlaySource::Default,
            ),
        };
        if let Some(slot) = self.underlays.slot(n.idx()) {
            *slot = Some(pack_underlay(v.0, v.1));
        }
        (UnderlayMtu::or_min(v.0), v.1)
    }

    pub(crate) fn cfg_of(&self, n: NodeId) -> u32 {
        let name = &*self.topo().node(n).name;
        self.settings
            .cfg_overrides
            .get(name)
            .copied()
            .unwrap_or(self.settings.cfg_mtu)
    }

    pub(super) fn cfg_leaf(&mut self, n: NodeId) -> Option<ExplId> {
        let v = self.cfg_of(n);
        (v > 0).then(|| self.expl.leaf(Leaf::Cfg { node: n }, Mtu::cap_or_min(v)))
    }

    /// The auto term of a link: `min(U(a), U(b)) − O(P, outer family)`.
    pub(super) fn auto_leaf(
        &mut self,
        n: NodeId,
        peer: NodeId,
        protocol: Protocol,
        ipv6_outer: bool,
    ) -> ExplId {
        let (ua, sa) = self.underlay(n);
        let (ub, sb) = self.underlay(peer);
        let (node, u, src) = if ua <= ub {
            (n, ua, sa)
        } else {
            (peer, ub, sb)
        };
        let slot = auto_slot(protocol, ipv6_outer);
        if let Some(Some(x)) = self.auto_leaves.get(node.idx()).get(slot) {
            return ExplId(x.get().saturating_sub(1));
        }
        let o = overhead(protocol, ipv6_outer);
        let x = self.expl.leaf(
            Leaf::Auto {
                node,
                underlay: u.get(),
                source: src,
                protocol,
                overhead: o,
                ipv6_outer,
            },
            u.minus_overhead(o),
        );
        if let Some(a) = self
            .auto_leaves
            .slot(node.idx())
            .and_then(|a| a.get_mut(slot))
        {
            *a = x.0.checked_add(1).and_then(std::num::NonZeroU32::new);
        }
        x
    }

    /// The MTU of the link from `n` to `peer` with its explanation (None when not linked).
    pub(crate) fn link_value(&mut self, n: NodeId, peer: NodeId) -> Option<ExplId> {
        if let Some(x) = self.link_memo.get(&(n, peer)) {
            return *x;
        }
        let r = self.net.link(n, peer).map(|link| self.link_expl(n, &link));
        self.link_memo.insert((n, peer), r);
        r
    }

    fn link_expl(&mut self, n: NodeId, link: &Link) -> ExplId {
        let auto = self.auto_leaf(n, link.peer, link.protocol, link.ipv6_outer);
        let caps = self.link_caps(n, link.peer, link.kind);
        let unpathed = self.link_min(n, auto, caps);
        self.with_path(n, link, unpathed).0
    }

    /// The link's MTU with the pair's probed path MTU (`min(link, P(a,b) − O)`, D13), and the
    /// value without it when there is one (what enters the fabric, `mtu.md` §5): a pair without
    /// a path MTU keeps `unpathed` as it is.
    pub(super) fn with_path(
        &mut self,
        n: NodeId,
        link: &Link,
        unpathed: ExplId,
    ) -> (ExplId, Option<ExplId>) {
        let Some(p) = self.topo().path_mtu(n, link.peer) else {
            return (unpathed, None);
        };
        let o = overhead(link.protocol, link.ipv6_outer);
        let (a, b) = if n <= link.peer {
            (n, link.peer)
        } else {
            (link.peer, n)
        };
        let path = self.expl.leaf(
            Leaf::Path {
                a,
                b,
                by: p.by,
                mtu: p.mtu,
                invalid: p.invalid,
                protocol: link.protocol,
                overhead: o,
                ipv6_outer: link.ipv6_outer,
            },
            UnderlayMtu::or_min(p.mtu).minus_overhead(o),
        );
        (self.expl.min_with(unpathed, &[path]), Some(unpathed))
    }

    /// A link's MTU from its terms: `min(auto, cfg(n), configured caps)`.
    pub(super) fn link_min(&mut self, n: NodeId, auto: ExplId, caps: Option<ExplId>) -> ExplId {
        let kids: SmallVec<[ExplId; 2]> = self.cfg_leaf(n).into_iter().chain(caps).collect();
        // The auto term is always present, so the minimum always exists.
        self.expl.min_with(auto, &kids)
    }

    pub(super) fn device_of(&self, link: &Link) -> DeviceRef {
        let topo = self.topo();
        match link.protocol {
            Protocol::WireGuard => {
                let peer = topo.node(link.peer);
                if peer.is_gateway() {
                    DeviceRef::PerPeer {
                        name: peer.wg_port.map(|p| format!("wg{p}")),
                        peer: link.peer,
                    }
                } else {
                    DeviceRef::Shared(self.shared_names[3].clone())
                }
            }
            Protocol::Geneve => DeviceRef::Shared(self.shared_names[0].clone()),
            Protocol::Vxlan => DeviceRef::Shared(self.shared_names[1].clone()),
            Protocol::Ipip => DeviceRef::Shared(self.shared_names[2].clone()),
            Protocol::None => DeviceRef::Underlay,
        }
    }

    /// `U(n) − O(protocol, family)` as a term naming node `n`.
    pub(super) fn underlay_minus(
        &mut self,
        n: NodeId,
        protocol: Protocol,
        ipv6_outer: bool,
    ) -> ExplId {
        let (u, src) = self.underlay(n);
        let o = overhead(protocol, ipv6_outer);
        self.expl.leaf(
            Leaf::Underlay {
                node: n,
                underlay: u.get(),
                source: src,
                minus: Some(Minus {
                    protocol,
                    overhead: o,
                    ipv6_outer,
                }),
            },
            u.minus_overhead(o),
        )
    }

    /// The protocol a delivery link from gateway `g` into Site `d` would take, and whether its
    /// outer family is IPv6 (by the gateway's own underlay address towards `d`: the worker end
    /// is unknown while `d` has no worker).
    pub(super) fn hypothetical_delivery(&mut self, g: NodeId, d: SiteId) -> (Protocol, bool) {
        let topo = self.topo();
        let gn = topo.node(g);
        let explicit = gn
            .pool()
            .and_then(|p| self.net.sgpa(d, p).protocol)
            .map(|x| x.0)
            .or_else(|| {
                if gn.site == d {
                    topo.site(d).protocol
                } else {
                    None
                }
            });
        let external = gn.pool().is_some_and(|p| !topo.pool(p).internal);
        let public = gn.site != d && !self.net.network_peered(gn.site, d) && external;
        let ipv6_outer = self.net.outer_ipv6(self.net.underlay_addr(g, public), None);
        let protocol = match explicit {
            Some(p) => p,
            None if public => self.settings.link.public_encap,
            None => self.settings.link.private_encap,
        };
        (protocol, ipv6_outer)
    }
}

/// The sources in packing order.
const UNDERLAY_SOURCES: [UnderlaySource; 5] = [
    UnderlaySource::Annotation,
    UnderlaySource::Max,
    UnderlaySource::Default,
    UnderlaySource::Override,
    UnderlaySource::Invalid,
];

/// An underlay and its source as one non-zero word: the value in the low 32 bits, the source's
/// index in `UNDERLAY_SOURCES` above it, and bit 63 set.
fn pack_underlay(u: u32, s: UnderlaySource) -> std::num::NonZeroU64 {
    let i = UNDERLAY_SOURCES.iter().position(|x| *x == s).unwrap_or(0) as u64;
    // Bit 63 makes the word non-zero whatever the value.
    std::num::NonZeroU64::new(1u64 << 63 | i << 32 | u64::from(u))
        .unwrap_or(std::num::NonZeroU64::MIN)
}

fn unpack_underlay(x: std::num::NonZeroU64) -> (u32, UnderlaySource) {
    let x = x.get();
    let i = usize::try_from((x >> 32) & 0xff).unwrap_or(0);
    let u = u32::try_from(x & u64::from(u32::MAX)).unwrap_or(0);
    (
        u,
        UNDERLAY_SOURCES
            .get(i)
            .copied()
            .unwrap_or(UnderlaySource::Default),
    )
}

/// The index of a protocol in per-protocol arrays.
fn protocol_slot(p: Protocol) -> usize {
    match p {
        Protocol::WireGuard => 0,
        Protocol::Geneve => 1,
        Protocol::Vxlan => 2,
        Protocol::Ipip => 3,
        Protocol::None => 4,
    }
}

/// The index of an auto term in a node's array: per protocol, the IPv4 then the IPv6 column.
fn auto_slot(p: Protocol, ipv6_outer: bool) -> usize {
    protocol_slot(p)
        .saturating_mul(2)
        .saturating_add(usize::from(ipv6_outer))
}
