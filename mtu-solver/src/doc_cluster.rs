//! The small cluster the documentation's examples ask about: Sites `a` and `b` peered over
//! GENEVE with a cap of 1400 (`SitePeering/ab`), one node in each (`wa`, `wb`).

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

/// A resolver of [`TWO_SITES`], read from `cluster.yaml`, with the default settings.
pub fn resolver() -> Resolver {
    Resolver::new(
        load::from_sources([("cluster.yaml", TWO_SITES)]),
        Settings::default(),
    )
}
