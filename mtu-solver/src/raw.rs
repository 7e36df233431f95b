//! The `tunnelMTU` of a decoded object, read and written in one place: what-if sets it on the
//! objects it mutates and compares it, locality digests objects with and without it.

use topology_core::decode::{RawCap, RawObject};

/// The `tunnelMTU` of an object that has one, to write (None for kinds without the field).
pub(crate) fn cap_slot(o: &mut RawObject) -> Option<&mut Option<RawCap>> {
    match o {
        RawObject::Site(s) => Some(&mut s.cap),
        RawObject::Pool(p) => Some(&mut p.cap),
        RawObject::SitePeering(r) | RawObject::Assignment(r) | RawObject::PoolPeering(r) => {
            Some(&mut r.cap)
        }
        _ => None,
    }
}

/// The `tunnelMTU` of an object that has one (read-only [`cap_slot`]).
pub(crate) fn raw_cap(o: &RawObject) -> Option<&Option<RawCap>> {
    match o {
        RawObject::Site(s) => Some(&s.cap),
        RawObject::Pool(p) => Some(&p.cap),
        RawObject::SitePeering(r) | RawObject::Assignment(r) | RawObject::PoolPeering(r) => {
            Some(&r.cap)
        }
        _ => None,
    }
}
