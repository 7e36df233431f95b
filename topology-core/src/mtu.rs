//! MTU newtypes. An underlay MTU (what the wire between two hosts carries) and an inner MTU
//! (what fits inside a tunnel, or what a cap allows) are different quantities: the only way
//! from one to the other is [`UnderlayMtu::minus_overhead`], so mixing them does not compile.

use std::fmt;

/// The smallest MTU any value may take (fail-closed value of invalid caps and underlays).
pub const MIN_MTU: u32 = 576;
/// Largest valid `tunnelMTU`.
pub const MAX_CAP: u32 = 9000;
/// Largest valid underlay annotation.
pub const MAX_UNDERLAY: u32 = 65535;

/// The MTU of a node's underlay (outer packets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnderlayMtu(pub u32);

/// An MTU inside the overlay: a link, route, device, fabric, cap or published value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mtu(pub u32);

impl UnderlayMtu {
    /// The inner MTU left after `overhead` bytes of encapsulation (never below zero).
    pub fn minus_overhead(self, overhead: u32) -> Mtu {
        Mtu(self.0.saturating_sub(overhead))
    }
    /// The underlay carried without encapsulation (`None` protocol, routed CIDR egress).
    pub fn unencapsulated(self) -> Mtu {
        Mtu(self.0)
    }
}

impl Mtu {
    /// The value in bytes.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl fmt::Display for Mtu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for UnderlayMtu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
