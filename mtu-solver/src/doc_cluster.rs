//! The small cluster the documentation's examples ask about: Sites `a` and `b` peered over
//! GENEVE with a cap of 1400 (`SitePeering/ab`), one node in each (`wa`, `wb`); and, for the
//! questions only gateways raise, a hub-and-spoke cluster ([`HUB_AND_SPOKE`]).

use crate::{Resolver, Settings, load};

/// The manifests, as one source.
pub const TWO_SITES: &str = "\
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: a}
spec: {nodeCidrs: [10.0.0.0/16], podCidrAssignments: [{cidrBlocks: [10.9.0.0/16]}]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: b}
spec: {nodeCidrs: [10.1.0.0/16], podCidrAssignments: [{cidrBlocks: [10.8.0.0/16]}]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SitePeering
metadata: {name: ab}
spec:
  sites: [a, b]
  tunnelMTU: 1400
---
apiVersion: v1
kind: Node
metadata: {name: wa, labels: {net.unbounded-cloud.io/site: a}}
status: {addresses: [{type: InternalIP, address: 10.0.0.1}]}
spec: {podCIDRs: [10.9.1.0/24]}
---
apiVersion: v1
kind: Node
metadata: {name: wb, labels: {net.unbounded-cloud.io/site: b}}
status: {addresses: [{type: InternalIP, address: 10.1.0.1}]}
spec: {podCIDRs: [10.8.1.0/24]}
";

/// Hub and spoke: Sites `a` and `b` reach each other through the External pool `ph`, whose two
/// gateways `h1` and `h2` sit in Site `h` (`SiteGatewayPoolAssignment/spokes`, tunnelMTU
/// 1380). Worker `a1`'s route to `b`'s pods is learned, with two forwarding paths.
pub const HUB_AND_SPOKE: &str = "\
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: a}
spec: {nodeCidrs: [10.1.0.0/16], podCidrAssignments: [{cidrBlocks: [10.101.0.0/16]}]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: b}
spec: {nodeCidrs: [10.2.0.0/16], podCidrAssignments: [{cidrBlocks: [10.102.0.0/16]}]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: h}
spec: {nodeCidrs: [10.5.0.0/16], podCidrAssignments: [{cidrBlocks: [10.105.0.0/16]}]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPool
metadata: {name: ph}
spec: {type: External, nodeSelector: {gw: hub}}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SiteGatewayPoolAssignment
metadata: {name: spokes}
spec: {sites: [a, b], gatewayPools: [ph], tunnelMTU: 1380}
---
apiVersion: v1
kind: Node
metadata: {name: a1}
spec: {podCIDRs: [10.101.0.0/24]}
status: {addresses: [{type: InternalIP, address: 10.1.0.1}]}
---
apiVersion: v1
kind: Node
metadata: {name: b1}
spec: {podCIDRs: [10.102.0.0/24]}
status: {addresses: [{type: InternalIP, address: 10.2.0.1}]}
---
apiVersion: v1
kind: Node
metadata: {name: h1, labels: {gw: hub}}
spec: {podCIDRs: [10.105.0.0/24]}
status:
  addresses: [{type: InternalIP, address: 10.5.0.1}, {type: ExternalIP, address: 203.0.113.1}]
---
apiVersion: v1
kind: Node
metadata: {name: h2, labels: {gw: hub}}
spec: {podCIDRs: [10.105.1.0/24]}
status:
  addresses: [{type: InternalIP, address: 10.5.0.2}, {type: ExternalIP, address: 203.0.113.2}]
";

/// A resolver of [`TWO_SITES`], read from `cluster.yaml`, with the default settings.
pub fn resolver() -> Resolver {
    Resolver::new(
        load::from_sources([("cluster.yaml", TWO_SITES)]),
        Settings::default(),
    )
}
