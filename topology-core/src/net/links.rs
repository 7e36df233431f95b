//! Links: who links to whom, of which kind, over which protocol and addresses, and the direct
//! routes a link carries.

use super::*;
use crate::vocab::Protocol;
use ipnet::IpNet;
use smallvec::SmallVec;
use std::net::IpAddr;

impl<'t> Net<'t> {
    /// Whether the link `a–b` crosses public addresses: its ends are in different Sites, those
    /// Sites are not `networkPeered`, and at least one end is a gateway of an External pool.
    pub fn crosses_public(&self, a: NodeId, b: NodeId) -> bool {
        let topo = self.topo;
        let (na, nb) = (topo.node(a), topo.node(b));
        if na.site == nb.site || self.network_peered(na.site, nb.site) {
            return false;
        }
        let external_gw = |n: &crate::model::NodeInfo| match n.role {
            Role::Gateway(p) => !topo.pool(p).internal,
            Role::Worker => false,
        };
        external_gw(na) || external_gw(nb)
    }

    /// The underlay address of node `n` on a link: its ExternalIP when the link
    /// crosses public addresses and the node is a gateway of an External pool, its InternalIP
    /// otherwise; of either list, the first address of the tunnel IP family, else the first.
    pub fn underlay_addr(&self, n: NodeId, public: bool) -> Option<IpAddr> {
        let topo = self.topo;
        let node = topo.node(n);
        if public
            && let Role::Gateway(p) = node.role
            && !topo.pool(p).internal
            && let Some(ext) = self.pick_family(&node.external_ips)
        {
            return Some(ext);
        }
        self.pick_family(&node.internal_ips)
    }

    /// Where the tunnel packets of a link to node `n` are sent: its underlay address, except a
    /// worker across public addresses that has an ExternalIP. Such a worker sits behind NAT, and
    /// its private address is not routable from the other Site (which is why gateways route it
    /// as `NodeAddress` host routes); its ExternalIP is where its packets arrive.
    pub fn endpoint_addr(&self, n: NodeId, public: bool) -> Option<IpAddr> {
        self.addrs(n, public).endpoint
    }

    /// Both addresses of node `n` on a link, each picked once.
    fn addrs(&self, n: NodeId, public: bool) -> LinkAddrs {
        let underlay = self.underlay_addr(n, public);
        let node = self.topo.node(n);
        let nat = if public && node.role == Role::Worker {
            self.pick_family(&node.external_ips)
        } else {
            None
        };
        LinkAddrs {
            underlay,
            endpoint: nat.or(underlay),
        }
    }

    /// The outer family of the link between `n` and `peer` ([`Net::outer_ipv6`] of their
    /// underlay addresses), also IPv6 when either end's endpoint address is: whichever header the
    /// packets carry, the overhead taken is never the smaller one.
    pub fn link_ipv6_outer(&self, n: NodeId, peer: NodeId, public: bool) -> bool {
        self.family_of(&self.addrs(n, public), &self.addrs(peer, public))
    }

    fn family_of(&self, a: &LinkAddrs, b: &LinkAddrs) -> bool {
        self.outer_ipv6(a.underlay, b.underlay) || self.outer_ipv6(a.endpoint, b.endpoint)
    }

    /// The address that identifies node `n` on every link, whatever address a link uses: its
    /// private underlay address (else its first external one). Tunnel MACs derive from it, so
    /// every peer computes the same MAC for a node that is reached at several addresses.
    pub fn identity_addr(&self, n: NodeId) -> Option<IpAddr> {
        self.underlay_addr(n, false)
            .or_else(|| self.pick_family(&self.topo.node(n).external_ips))
    }

    /// Whether the link from `n` to `peer` of this kind carries `NodePod` routes (the peer's own
    /// pod CIDRs): every link but one between a worker and a gateway located in the worker's own
    /// Site when that Site does not manage its CNI (its own network routes its pods).
    pub fn carries_node_pods(&self, n: NodeId, peer: NodeId, kind: LinkKind) -> bool {
        if !matches!(kind, LinkKind::Uplink | LinkKind::Delivery) {
            return true;
        }
        let topo = self.topo;
        let (a, b) = (topo.node(n), topo.node(peer));
        a.site != b.site || topo.site(a.site).manage_cni
    }

    /// The direct routes the link from `n` carries, in no particular order: the peer's own pod CIDRs (`NodePod`, unless
    /// [`Net::carries_node_pods`] says otherwise) and, on a gateway's delivery link across public
    /// addresses, a host route to each InternalIP of the worker (`NodeAddress`).
    pub fn direct_routes(&self, n: NodeId, link: &Link) -> SmallVec<[(IpNet, RouteType); 4]> {
        let mut out: SmallVec<[(IpNet, RouteType); 4]> = SmallVec::new();
        self.for_each_direct_route(n, link, |dest, ty| out.push((dest, ty)));
        out
    }

    /// [`Net::direct_routes`] without collecting them: `f` gets each destination and type (the
    /// resolver calls this for every link of every node).
    pub fn for_each_direct_route(
        &self,
        n: NodeId,
        link: &Link,
        mut f: impl FnMut(IpNet, RouteType),
    ) {
        let peer = self.topo.node(link.peer);
        if self.carries_node_pods(n, link.peer, link.kind) {
            for c in &peer.pod_cidrs {
                f(*c, RouteType::NodePod);
            }
        }
        if link.kind == LinkKind::Delivery && link.public {
            for ip in &peer.internal_ips {
                f(IpNet::from(*ip), RouteType::NodeAddress);
            }
        }
    }

    fn pick_family(&self, addrs: &[IpAddr]) -> Option<IpAddr> {
        addrs
            .iter()
            .find(|a| a.is_ipv6() == self.settings.ipv6_outer)
            .or_else(|| addrs.first())
            .copied()
    }

    /// The protocol of a link and who decided it: the first explicit (non-`Auto`) value among
    /// its governing objects (the Site of a mesh link inside one Site, the SitePeerings of a mesh
    /// link across Sites, the assignments of an uplink or delivery link, then the worker's Site
    /// when the gateway is in it, the GatewayPool of a pool-mesh link, the GatewayPoolPeerings of
    /// a transit link); `Auto` resolves to the public encapsulation across public addresses and
    /// to the private one elsewhere.
    pub fn link_protocol(
        &self,
        a: NodeId,
        b: NodeId,
        kind: LinkKind,
    ) -> (Protocol, ProtocolSource, bool) {
        let topo = self.topo;
        let (na, nb) = (topo.node(a), topo.node(b));
        let explicit: Option<(Protocol, ObjRef)> = match kind {
            LinkKind::Mesh => {
                if na.site == nb.site {
                    topo.site(na.site)
                        .protocol
                        .map(|p| (p, ObjRef::Site(na.site)))
                } else {
                    self.site_pair(na.site, nb.site).mesh_protocol
                }
            }
            LinkKind::Uplink | LinkKind::Delivery => {
                let (w, g) = if kind == LinkKind::Uplink {
                    (na, nb)
                } else {
                    (nb, na)
                };
                let pool = g.pool();
                let from_sgpa = pool.and_then(|p| self.sgpa(w.site, p).protocol);
                from_sgpa.or_else(|| {
                    if w.site == g.site {
                        topo.site(w.site)
                            .protocol
                            .map(|p| (p, ObjRef::Site(w.site)))
                    } else {
                        None
                    }
                })
            }
            LinkKind::PoolMesh => na
                .pool()
                .and_then(|p| topo.pool(p).protocol.map(|pr| (pr, ObjRef::Pool(p)))),
            LinkKind::Transit => match (na.pool(), nb.pool()) {
                (Some(p), Some(q)) => self.gpp(p, q).protocol,
                _ => None,
            },
        };
        let public = self.crosses_public(a, b);
        match explicit {
            Some((p, o)) => (p, ProtocolSource::Object(o), public),
            None if public => (
                self.settings.public_encap,
                ProtocolSource::AutoPublic,
                public,
            ),
            None => (
                self.settings.private_encap,
                ProtocolSource::AutoPrivate,
                public,
            ),
        }
    }

    fn make_link(&self, n: NodeId, peer: NodeId, kind: LinkKind) -> Link {
        let (protocol, protocol_source, public) = self.link_protocol(n, peer, kind);
        let (local, remote) = (self.addrs(n, public), self.addrs(peer, public));
        Link {
            peer,
            kind,
            protocol,
            protocol_source,
            public,
            local_addr: local.endpoint,
            peer_addr: remote.endpoint,
            ipv6_outer: self.family_of(&local, &remote),
        }
    }

    /// The outer family of a link between these underlay addresses: IPv6 when the
    /// tunnel family is IPv6, and also when either end's address is IPv6, which happens when that
    /// node has no address of the tunnel family: the overhead column is the one of the header the
    /// packets really carry, so an IPv6-only node never gets the smaller IPv4 overhead.
    pub fn outer_ipv6(&self, local: Option<IpAddr>, peer: Option<IpAddr>) -> bool {
        self.settings.ipv6_outer
            || local.is_some_and(|a| a.is_ipv6())
            || peer.is_some_and(|a| a.is_ipv6())
    }

    /// The peers of node `n` with the link kind, sorted by peer (cheap: no protocol work).
    pub fn link_peers(&self, n: NodeId) -> Vec<(NodeId, LinkKind)> {
        let topo = self.topo;
        let node = topo.node(n);
        // The peers come from a few member lists (a gateway's: thousands of workers): the lists
        // are gathered first, so the output is allocated once at its size. Lists that may name
        // `n` itself (its Site's workers, its pool's gateways) are of kinds `Mesh` and
        // `PoolMesh`.
        let mut lists: SmallVec<[(&[NodeId], LinkKind); 8]> = SmallVec::new();
        match node.role {
            Role::Worker => {
                let s = node.site;
                let mut sites: SmallVec<[SiteId; 8]> = SmallVec::new();
                if topo.site(s).manage_cni {
                    sites.push(s);
                }
                for pid in topo.peerings_of(s) {
                    let r = topo.site_peering(*pid);
                    if r.mesh {
                        sites.extend(r.sites.iter().copied().filter(|t| *t != s));
                    }
                }
                sites.sort_unstable();
                sites.dedup();
                for t in sites {
                    lists.push((topo.workers_of(t), LinkKind::Mesh));
                }
                for p in self.assigned(s) {
                    lists.push((&topo.pool(p).gateways, LinkKind::Uplink));
                }
            }
            Role::Gateway(p) => {
                for s in self.served_sites(p) {
                    lists.push((topo.workers_of(*s), LinkKind::Delivery));
                }
                lists.push((&topo.pool(p).gateways, LinkKind::PoolMesh));
                for q in self.peered_pools(p) {
                    lists.push((&topo.pool(q).gateways, LinkKind::Transit));
                }
            }
        }
        let len = lists
            .iter()
            .map(|(l, _)| l.len())
            .fold(0, usize::saturating_add);
        let mut out: Vec<(NodeId, LinkKind)> = Vec::with_capacity(len);
        for (list, kind) in lists {
            if matches!(kind, LinkKind::Mesh | LinkKind::PoolMesh) {
                out.extend(list.iter().filter(|m| **m != n).map(|m| (*m, kind)));
            } else {
                out.extend(list.iter().map(|m| (*m, kind)));
            }
        }
        out.sort_unstable();
        out.dedup_by_key(|x| x.0);
        out
    }

    /// The links of node `n`, sorted by peer.
    pub fn links(&self, n: NodeId) -> Vec<Link> {
        self.link_peers(n)
            .into_iter()
            .map(|(peer, kind)| self.make_link(n, peer, kind))
            .collect()
    }

    /// The link from `n` to `peer`, if they are linked.
    pub fn link(&self, n: NodeId, peer: NodeId) -> Option<Link> {
        self.link_kind(n, peer).map(|k| self.make_link(n, peer, k))
    }

    /// The kind of the link from `n` to `peer`, if they are linked (no enumeration).
    pub fn link_kind(&self, n: NodeId, peer: NodeId) -> Option<LinkKind> {
        let topo = self.topo;
        if n == peer {
            return None;
        }
        let (a, b) = (topo.node(n), topo.node(peer));
        match (a.role, b.role) {
            (Role::Worker, Role::Worker) => {
                let ok = if a.site == b.site {
                    topo.site(a.site).manage_cni
                } else {
                    self.site_pair(a.site, b.site).mesh
                };
                ok.then_some(LinkKind::Mesh)
            }
            (Role::Worker, Role::Gateway(p)) => self.serves(p, a.site).then_some(LinkKind::Uplink),
            (Role::Gateway(p), Role::Worker) => {
                self.serves(p, b.site).then_some(LinkKind::Delivery)
            }
            (Role::Gateway(p), Role::Gateway(q)) => {
                if p == q {
                    Some(LinkKind::PoolMesh)
                } else if self.peered_pools(p).contains(&q) {
                    Some(LinkKind::Transit)
                } else {
                    None
                }
            }
        }
    }
}
