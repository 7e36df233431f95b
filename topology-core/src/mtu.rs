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

/// The MTU of a node's underlay (outer packets): 576..65535.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnderlayMtu(u32);

/// An MTU inside the overlay: a link, route, device, fabric, cap or published value, at most
/// 65535. Values below 576 exist (an underlay of 576 minus an overhead); the solver's floors
/// and diagnostics deal with them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mtu(u32);

impl UnderlayMtu {
    /// The smallest underlay MTU, which invalid values fail closed to.
    pub const MIN: UnderlayMtu = UnderlayMtu(MIN_MTU);

    /// An underlay MTU of `v` bytes: `None` outside 576..65535.
    pub fn new(v: u32) -> Option<UnderlayMtu> {
        (MIN_MTU..=MAX_UNDERLAY)
            .contains(&v)
            .then_some(UnderlayMtu(v))
    }

    /// `v`, or 576 when it is outside 576..65535 (fail closed, as an invalid annotation does).
    pub fn or_min(v: u32) -> UnderlayMtu {
        UnderlayMtu::new(v).unwrap_or(UnderlayMtu::MIN)
    }

    /// The value in bytes.
    pub fn get(self) -> u32 {
        self.0
    }

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
    /// The smallest valid cap, which invalid caps fail closed to.
    pub const MIN: Mtu = Mtu(MIN_MTU);

    /// An MTU of `v` bytes: `None` above 65535 (the largest IP packet) or at 0.
    pub fn new(v: u32) -> Option<Mtu> {
        (1..=MAX_UNDERLAY).contains(&v).then_some(Mtu(v))
    }

    /// A cap (`tunnelMTU`, the agent's `mtu`) of `v` bytes: `None` outside 576..9000.
    pub fn cap(v: u32) -> Option<Mtu> {
        (MIN_MTU..=MAX_CAP).contains(&v).then_some(Mtu(v))
    }

    /// A cap of `v` bytes, or 576 when it is outside 576..9000 (fail closed).
    pub fn cap_or_min(v: u32) -> Mtu {
        Mtu::cap(v).unwrap_or(Mtu::MIN)
    }

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
