//! The resources the adapter reads: the unbounded kinds (cluster-scoped, group
//! `net.unbounded-cloud.io`, version `v1alpha1`) and core `v1` Nodes.

use topology_core::vocab::{API_GROUP as GROUP, API_VERSION as VERSION, Kind};

/// A listable, watchable, cluster-scoped resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceKind {
    /// The kind as the decoder knows it.
    pub kind: Kind,
}

impl ResourceKind {
    /// Every kind the offline commands list, Nodes last.
    pub const ALL: [ResourceKind; 8] = [
        ResourceKind { kind: Kind::Site },
        ResourceKind {
            kind: Kind::SiteNodeSlice,
        },
        ResourceKind {
            kind: Kind::GatewayPool,
        },
        ResourceKind {
            kind: Kind::GatewayPoolNode,
        },
        ResourceKind {
            kind: Kind::SitePeering,
        },
        ResourceKind {
            kind: Kind::SiteGatewayPoolAssignment,
        },
        ResourceKind {
            kind: Kind::GatewayPoolPeering,
        },
        ResourceKind { kind: Kind::Node },
    ];

    /// The resource of a kind.
    pub const fn of(kind: Kind) -> ResourceKind {
        ResourceKind { kind }
    }

    /// The plural resource name.
    pub fn plural(self) -> &'static str {
        match self.kind {
            Kind::Site => "sites",
            Kind::SiteNodeSlice => "sitenodeslices",
            Kind::GatewayPool => "gatewaypools",
            Kind::GatewayPoolNode => "gatewaypoolnodes",
            Kind::SitePeering => "sitepeerings",
            Kind::SiteGatewayPoolAssignment => "sitegatewaypoolassignments",
            Kind::GatewayPoolPeering => "gatewaypoolpeerings",
            Kind::Node => "nodes",
        }
    }

    /// The resource as kubectl names it: the plural, then the API group (`sites.net.unbounded-cloud.io`;
    /// `nodes` for the core group).
    pub fn resource(self) -> String {
        match self.kind {
            Kind::Node => self.plural().to_string(),
            _ => format!("{}.{GROUP}", self.plural()),
        }
    }

    /// `apiVersion` of its objects.
    pub fn api_version(self) -> String {
        match self.kind {
            Kind::Node => "v1".to_string(),
            _ => format!("{GROUP}/{VERSION}"),
        }
    }

    /// A kube `ApiResource` for `Api<DynamicObject>`.
    pub fn api_resource(self) -> kube::core::ApiResource {
        let (group, version) = match self.kind {
            Kind::Node => ("", "v1"),
            _ => (GROUP, VERSION),
        };
        kube::core::ApiResource {
            group: group.to_string(),
            version: version.to_string(),
            api_version: self.api_version(),
            kind: self.kind.as_str().to_string(),
            plural: self.plural().to_string(),
        }
    }
}

impl std::fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.plural())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource;
    use kube::core::DynamicObject;

    #[test]
    fn urls_come_from_the_api_resource() {
        let r = ResourceKind::of(Kind::SiteGatewayPoolAssignment).api_resource();
        assert_eq!(
            DynamicObject::url_path(&r, None),
            "/apis/net.unbounded-cloud.io/v1alpha1/sitegatewaypoolassignments"
        );
        let n = ResourceKind::of(Kind::Node).api_resource();
        assert_eq!(DynamicObject::url_path(&n, None), "/api/v1/nodes");
    }
}
