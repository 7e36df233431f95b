//! Terms in words: a term's short name, where its object was read, where its value came from
//! with its arithmetic, and a pair's path MTU, as explanations, diagnostics and probes print them.

use super::{ExplId, Explanations, Kind, Leaf, UnderlaySource};
use topology_core::ids::NodeId;
use topology_core::model::{ObjRef, Topology};
use topology_core::mtu::Mtu;
use topology_core::vocab::PATH_MTU_ANNOTATION;

/// Where a leaf term came from, in words, reproducing its arithmetic. Sources name objects and
/// fields, not file positions: output must not depend on where (or in which order) objects were
/// read; `Explanations::term_location` gives the position.
fn leaf_source(l: &Leaf, value: Mtu, topo: &Topology) -> String {
    let loc = |o: &ObjRef| {
        topo.cap_of(*o)
            .and_then(|c| c.invalid.as_ref())
            .map(|inv| format!(" (invalid {inv}, fails closed to 576)"))
            .unwrap_or_default()
    };
    let under = |s: &UnderlaySource| s.note();
    match l {
        Leaf::Cfg { node: n } => {
            format!("agent config mtu {} on {}", value, topo.node(*n).name)
        }
        Leaf::Auto {
            node: n,
            underlay,
            source,
            protocol,
            overhead,
            ipv6_outer,
        } => format!(
            "underlay of {} {}{} − {} overhead {}{}",
            topo.node(*n).name,
            underlay,
            under(source),
            protocol,
            overhead,
            family_note(*ipv6_outer)
        ),
        Leaf::Path {
            a,
            b,
            by,
            mtu,
            invalid,
            protocol,
            overhead,
            ipv6_outer,
        } => format!(
            "{} − {} overhead {}{}",
            path_words(topo, *a, *b, *mtu, *invalid, *by),
            protocol,
            overhead,
            family_note(*ipv6_outer)
        ),
        Leaf::Underlay {
            node: n,
            underlay,
            source,
            minus,
        } => match minus {
            Some(m) => format!(
                "underlay of {} {}{} − {} overhead {}{}",
                topo.node(*n).name,
                underlay,
                under(source),
                m.protocol,
                m.overhead,
                family_note(m.ipv6_outer)
            ),
            None => format!(
                "underlay of {} {}{}",
                topo.node(*n).name,
                underlay,
                under(source)
            ),
        },
        Leaf::Cap { obj } => {
            format!("{} spec.tunnelMTU {}{}", topo.label(*obj), value, loc(obj))
        }
        Leaf::Comp { site, obj } => format!(
            "direct-mesh component of Site/{}: {} spec.tunnelMTU {}{}",
            topo.site(*site).name,
            topo.label(*obj),
            value,
            loc(obj)
        ),
        Leaf::Published { gateway, prefix } => format!(
            "published by gateway {} for {} (GatewayPoolNode annotation)",
            topo.node(*gateway).name,
            prefix
        ),
    }
}

/// `path A↔B MTU (probed by X)`: a pair's path MTU as explanations and probes word it, `a`
/// and `b` in ID order.
pub(crate) fn path_words(
    topo: &Topology,
    a: NodeId,
    b: NodeId,
    mtu: u32,
    invalid: bool,
    by: NodeId,
) -> String {
    format!(
        "path {}↔{} {}{} (probed by {})",
        topo.node(a).name,
        topo.node(b).name,
        mtu,
        if invalid {
            " (invalid, fails closed to 576)"
        } else {
            ""
        },
        topo.node(by).name
    )
}

/// ` (IPv6 outer)` after an overhead of the IPv6 column: the family is named where it is not
/// the IPv4 default.
fn family_note(ipv6_outer: bool) -> &'static str {
    if ipv6_outer { " (IPv6 outer)" } else { "" }
}

impl Explanations {
    /// A term's short name (`auto`, `cfg`, `Site/A spec.tunnelMTU`, `published by g1`).
    /// Costs an index and the name's formatting.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// resolver.with_solver(|solver| {
    ///     let topo = solver.topo();
    ///     let plan = solver.plan(topo.find_node("wa").expect("wa"));
    ///     let arena = solver.explanations();
    ///     assert_eq!(arena.term_name(plan.links[0].mtu.expl, topo), "min");
    ///     assert_eq!(arena.term_name(plan.devices[0].mtu.expl, topo), "link to wb");
    /// });
    /// ```
    pub fn term_name(&self, id: ExplId, topo: &Topology) -> String {
        match &self.get(id).kind {
            Kind::Leaf(l) => match l {
                Leaf::Cfg { .. } => "cfg".to_string(),
                Leaf::Auto { .. } => "auto".to_string(),
                Leaf::Path { .. } => "path".to_string(),
                Leaf::Underlay { .. } => "underlay".to_string(),
                Leaf::Cap { obj } => format!("{} spec.tunnelMTU", topo.label(*obj)),
                Leaf::Comp { obj, .. } => format!("{} spec.tunnelMTU", topo.label(*obj)),
                Leaf::Published { gateway, .. } => {
                    format!("published by {}", topo.node(*gateway).name)
                }
            },
            Kind::Link { peer, .. } => format!("link to {}", topo.node(*peer).name),
            Kind::Min(_) => "min".to_string(),
            Kind::Max(_) => "max".to_string(),
        }
    }

    /// Where the field a cap or published term reads was written (`file:line`), for people.
    pub(crate) fn term_location(&self, id: ExplId, topo: &Topology) -> Option<String> {
        match &self.get(id).kind {
            Kind::Leaf(Leaf::Cap { obj }) | Kind::Leaf(Leaf::Comp { obj, .. }) => topo
                .cap_of(*obj)
                .and_then(|c| c.loc.as_ref())
                .map(|l| l.to_string()),
            Kind::Leaf(Leaf::Published { gateway, .. }) => topo
                .node(*gateway)
                .published_loc
                .as_ref()
                .map(|l| l.to_string()),
            Kind::Leaf(Leaf::Path { by, .. }) => topo.node(*by).loc.as_ref().map(|l| l.to_string()),
            _ => None,
        }
    }

    /// The object and field a term reads, when it reads one: a cap (`Kind/name`,
    /// `spec.tunnelMTU`, also inside a component cap), a node's underlay annotation or a
    /// GatewayPoolNode's published values. Agent settings, defaults and links name none.
    pub(crate) fn term_origin(&self, id: ExplId, topo: &Topology) -> Option<(String, String)> {
        const UNDERLAY: &str = "metadata.annotations.mtu.unbounded-cloud.io/underlay-mtu";
        const UNDERLAY_MAX: &str = "metadata.annotations.mtu.unbounded-cloud.io/underlay-mtu-max";
        let annotation = |n: &NodeId, source: &UnderlaySource| {
            let node = topo.node(*n);
            let field = match source {
                UnderlaySource::Annotation => UNDERLAY,
                UnderlaySource::Max => UNDERLAY_MAX,
                // An invalid annotation counted as 576: the one that is invalid.
                UnderlaySource::Invalid => {
                    if node
                        .underlay_max
                        .as_ref()
                        .is_some_and(|u| u.invalid.is_some())
                    {
                        UNDERLAY_MAX
                    } else {
                        UNDERLAY
                    }
                }
                UnderlaySource::Default | UnderlaySource::Override => return None,
            };
            Some((format!("Node/{}", node.name), field.to_string()))
        };
        match &self.get(id).kind {
            Kind::Leaf(Leaf::Cap { obj }) | Kind::Leaf(Leaf::Comp { obj, .. }) => {
                Some((topo.label(*obj), "spec.tunnelMTU".to_string()))
            }
            Kind::Leaf(Leaf::Auto { node, source, .. })
            | Kind::Leaf(Leaf::Underlay { node, source, .. }) => annotation(node, source),
            Kind::Leaf(Leaf::Path { by, .. }) => Some((
                format!("Node/{}", topo.node(*by).name),
                format!("metadata.annotations.{PATH_MTU_ANNOTATION}"),
            )),
            Kind::Leaf(Leaf::Published { gateway, .. }) => {
                topo.node(*gateway).published_by.as_ref().map(|g| {
                    (
                        format!("GatewayPoolNode/{g}"),
                        "metadata.annotations.mtu.unbounded-cloud.io/forwarding-mtus".to_string(),
                    )
                })
            }
            _ => None,
        }
    }

    /// Where a term came from, in words, reproducing its arithmetic.
    pub(crate) fn term_source(&self, id: ExplId, topo: &Topology) -> String {
        let node = self.get(id);
        match &node.kind {
            Kind::Leaf(l) => leaf_source(l, node.value, topo),
            Kind::Link { peer, inner, .. } => format!(
                "link MTU to {} {} (bound by {})",
                topo.node(*peer).name,
                node.value,
                self.term_name(self.get(*inner).bound, topo)
            ),
            Kind::Min(k) => format!("minimum of {} terms", k.len()),
            Kind::Max(k) => format!("maximum of {} links", k.len()),
        }
    }
}
