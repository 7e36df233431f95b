//! Name-keyed values of a node plan: what what-if and the incremental resolver compare.
//! Items sort in `resolve`'s output order (link, route, device, fabric, published).

use crate::explain::ExplId;
use crate::plan::{DeviceRef, NodePlan, RouteKind};
use ipnet::IpNet;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;
use topology_core::model::Topology;
use topology_core::net::prefix_order;

/// A prefix in output order; serialized as its canonical CIDR text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Prefix(pub IpNet);

impl PartialOrd for Prefix {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Prefix {
    fn cmp(&self, other: &Self) -> Ordering {
        prefix_order(&self.0, &other.0)
    }
}

/// Which value of a node. Serialized by its `type` and the fields that name it (`{"type":
/// "route", "destination": "10.1.0.0/16", "kind": "gateway"}`), and read back from that.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Item {
    /// A link, by peer name.
    Link {
        /// Peer name.
        peer: Arc<str>,
    },
    /// A route, by destination and kind.
    Route {
        /// Destination.
        destination: Prefix,
        /// Kind.
        kind: RouteKind,
    },
    /// A device: named ones by name, unnamed ones last by peer.
    Device {
        /// Unnamed devices sort last.
        unnamed: bool,
        /// Name (empty when unnamed).
        name: Arc<str>,
        /// Peer of a per-peer device (empty otherwise).
        peer: Arc<str>,
    },
    /// The fabric.
    Fabric,
    /// A published value.
    Published {
        /// Prefix.
        destination: Prefix,
    },
}

impl fmt::Display for Item {
    /// As the `what-if` table names values: `link b1`, `route 10.1.0.0/16 (gateway)`,
    /// `device wg0`, `device (wg for b1)`, `fabric`, `published 10.1.0.0/16`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Link { peer } => write!(f, "link {peer}"),
            Item::Route { destination, kind } => {
                write!(f, "route {} ({})", destination.0, kind.as_str())
            }
            Item::Device {
                unnamed: false,
                name,
                ..
            } => write!(f, "device {name}"),
            Item::Device { peer, .. } => write!(f, "device (wg for {peer})"),
            Item::Fabric => f.write_str("fabric"),
            Item::Published { destination } => write!(f, "published {}", destination.0),
        }
    }
}

/// The JSON/YAML shape of an [`Item`] (in `what-if` output): its `type` and the fields that
/// name it.
#[derive(Serialize)]
struct ItemOut<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    peer: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    destination: Option<IpNet>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<RouteKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

/// [`ItemOut`] as read back.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemIn {
    #[serde(rename = "type")]
    ty: String,
    #[serde(default)]
    peer: Option<Arc<str>>,
    #[serde(default)]
    destination: Option<IpNet>,
    #[serde(default)]
    kind: Option<RouteKind>,
    #[serde(default)]
    name: Option<Arc<str>>,
}

impl Serialize for Item {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut o = ItemOut {
            ty: "",
            peer: None,
            destination: None,
            kind: None,
            name: None,
        };
        match self {
            Item::Link { peer } => {
                o.ty = "link";
                o.peer = Some(peer);
            }
            Item::Route { destination, kind } => {
                o.ty = "route";
                o.destination = Some(destination.0);
                o.kind = Some(*kind);
            }
            Item::Device {
                unnamed,
                name,
                peer,
            } => {
                o.ty = "device";
                o.name = (!*unnamed).then_some(&**name);
                o.peer = (!peer.is_empty()).then_some(&**peer);
            }
            Item::Fabric => o.ty = "fabric",
            Item::Published { destination } => {
                o.ty = "published";
                o.destination = Some(destination.0);
            }
        }
        o.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Item, D::Error> {
        use serde::de::Error;
        let i = ItemIn::deserialize(deserializer)?;
        let missing = |field: &'static str| D::Error::missing_field(field);
        let empty = || Arc::<str>::from("");
        Ok(match i.ty.as_str() {
            "link" => Item::Link {
                peer: i.peer.ok_or_else(|| missing("peer"))?,
            },
            "route" => Item::Route {
                destination: Prefix(i.destination.ok_or_else(|| missing("destination"))?),
                kind: i.kind.ok_or_else(|| missing("kind"))?,
            },
            "device" => Item::Device {
                unnamed: i.name.is_none(),
                name: i.name.unwrap_or_else(empty),
                peer: i.peer.unwrap_or_else(empty),
            },
            "fabric" => Item::Fabric,
            "published" => Item::Published {
                destination: Prefix(i.destination.ok_or_else(|| missing("destination"))?),
            },
            other => {
                return Err(D::Error::unknown_variant(
                    other,
                    &["link", "route", "device", "fabric", "published"],
                ));
            }
        })
    }
}

/// Every value of a plan, keyed by name, with its explanation, in output order. Costs a pass
/// over the plan's values (and a sort when they are out of order).
///
/// ```
/// # let resolver = mtu_solver::doc_cluster::resolver();
/// let values = resolver.with_solver(|solver| {
///     let topo = solver.topo();
///     let plan = solver.plan(topo.find_node("wa").expect("wa"));
///     mtu_solver::snapshot::items(topo, &plan)
/// });
/// let named: Vec<String> = values.iter().map(|(item, mtu, _)| format!("{item}: {mtu}")).collect();
/// let direct = "route 10.8.1.0/24 (direct): 1400";
/// assert_eq!(named, ["link wb: 1400", direct, "device geneve0: 1400", "fabric: 1400"]);
/// ```
pub fn items(topo: &Topology, plan: &NodePlan) -> Vec<(Item, u32, ExplId)> {
    let mut out = Vec::with_capacity(
        plan.links
            .len()
            .saturating_add(plan.routes.len())
            .saturating_add(4),
    );
    for l in &plan.links {
        out.push((
            Item::Link {
                peer: topo.node(l.peer).name.clone(),
            },
            l.mtu.mtu.get(),
            l.mtu.expl,
        ));
    }
    for r in &plan.routes {
        out.push((
            Item::Route {
                destination: Prefix(r.destination),
                kind: r.kind,
            },
            r.mtu.mtu.get(),
            r.mtu.expl,
        ));
    }
    for d in &plan.devices {
        let item = match &d.device {
            DeviceRef::Shared(n) => Item::Device {
                unnamed: false,
                name: n.clone(),
                peer: Arc::from(""),
            },
            DeviceRef::PerPeer {
                name: Some(n),
                peer,
            } => Item::Device {
                unnamed: false,
                name: Arc::from(n.as_str()),
                peer: topo.node(*peer).name.clone(),
            },
            DeviceRef::PerPeer { name: None, peer } => Item::Device {
                unnamed: true,
                name: Arc::from(""),
                peer: topo.node(*peer).name.clone(),
            },
            DeviceRef::Underlay => continue,
        };
        out.push((item, d.mtu.mtu.get(), d.mtu.expl));
    }
    out.push((Item::Fabric, plan.fabric.mtu.get(), plan.fabric.expl));
    if let Some(ps) = &plan.published {
        for p in ps {
            out.push((
                Item::Published {
                    destination: Prefix(p.destination),
                },
                p.mtu.mtu.get(),
                p.mtu.expl,
            ));
        }
    }
    // A plan's values come nearly always in this order already: checked without the sort's
    // buffer.
    if !out.is_sorted_by(|a, b| a.0 <= b.0) {
        out.sort_by(|a, b| a.0.cmp(&b.0));
    }
    out
}
