//! Typed arena indices. Every arena of the validated topology is sorted by name, so an ID order
//! is a name order and output never depends on input order.

macro_rules! id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);
        impl $name {
            /// The arena index.
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
            /// The ID of arena index `i` (arenas never exceed u32).
            #[inline]
            pub fn from_idx(i: usize) -> Self {
                $name(u32::try_from(i).unwrap_or(u32::MAX))
            }
        }
    };
}

id!(/// A Site.
SiteId);
id!(/// A GatewayPool.
PoolId);
id!(/// A node (Node object, SiteNodeSlice entry, or GatewayPool status entry).
NodeId);
id!(/// A SitePeering.
PeeringId);
id!(/// A SiteGatewayPoolAssignment.
AssignmentId);
id!(/// A GatewayPoolPeering.
PoolPeeringId);
id!(/// A direct-mesh component of Sites.
CompId);
