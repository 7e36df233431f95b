//! Caps in place: a topology's objects found by kind and name, their caps replaced as a later
//! input writes them, and the direct-mesh components' caps that follow from them (also what
//! [`Topology::build`] computes them with).

use super::{Cap, ObjRef, Relation, Topology};
use crate::decode::RawCap;
use crate::ids::{AssignmentId, CompId, PeeringId, PoolPeeringId, SiteId};
use crate::mtu::Mtu;
use crate::vocab::Kind;

impl Topology {
    /// The object of a kind and name that can carry a cap, if it counts here (a disabled or
    /// duplicated relation does not).
    pub fn obj_ref(&self, kind: Kind, name: &str) -> Option<ObjRef> {
        let find = |rs: &[Relation]| rs.binary_search_by(|r| (*r.name).cmp(name)).ok();
        match kind {
            Kind::Site => self.site_id(name).map(ObjRef::Site),
            Kind::GatewayPool => self.pool_id(name).map(ObjRef::Pool),
            Kind::SitePeering => {
                find(&self.site_peerings).map(|i| ObjRef::SitePeering(PeeringId::from_idx(i)))
            }
            Kind::SiteGatewayPoolAssignment => {
                find(&self.assignments).map(|i| ObjRef::Assignment(AssignmentId::from_idx(i)))
            }
            Kind::GatewayPoolPeering => {
                find(&self.pool_peerings).map(|i| ObjRef::PoolPeering(PoolPeeringId::from_idx(i)))
            }
            _ => None,
        }
    }

    /// Replaces the caps of objects, each as its object now writes it (`tunnelMTU`, read as
    /// [`Topology::build`] reads it), and the component caps they enter: the topology then
    /// equals one built from objects that differ only in those caps and say nothing else new
    /// (their findings unchanged). Objects that do not count here are skipped.
    pub fn set_caps<'a>(&mut self, caps: impl IntoIterator<Item = (ObjRef, Option<&'a RawCap>)>) {
        for (o, raw) in caps {
            let cap = raw.map(Cap::from);
            let slot = match o {
                ObjRef::Site(s) => self.sites.get_mut(s.idx()).map(|x| &mut x.cap),
                ObjRef::Pool(p) => self.pools.get_mut(p.idx()).map(|x| &mut x.cap),
                ObjRef::SitePeering(r) => self.site_peerings.get_mut(r.idx()).map(|x| &mut x.cap),
                ObjRef::Assignment(r) => self.assignments.get_mut(r.idx()).map(|x| &mut x.cap),
                ObjRef::PoolPeering(r) => self.pool_peerings.get_mut(r.idx()).map(|x| &mut x.cap),
            };
            if let Some(slot) = slot {
                *slot = cap;
            }
        }
        component_caps(self);
    }
}

/// Every component's cap objects and binding cap, from the caps of its Sites and of the
/// counting mesh SitePeerings among them.
pub(super) fn component_caps(t: &mut Topology) {
    for comp in &mut t.components {
        comp.cap_objects.clear();
        comp.cap = None;
    }
    let mut contrib: Vec<(CompId, ObjRef, Mtu)> = Vec::new();
    for (i, s) in t.sites.iter().enumerate() {
        if let (Some(cap), Some(c)) = (&s.cap, t.comp_of.get(i)) {
            contrib.push((*c, ObjRef::Site(SiteId::from_idx(i)), cap.mtu));
        }
    }
    for (i, r) in t.site_peerings.iter().enumerate() {
        if !(r.relates && r.mesh) {
            continue;
        }
        if let (Some(cap), Some(first)) = (&r.cap, r.sites.first())
            && let Some(c) = t.comp_of.get(first.idx())
        {
            contrib.push((*c, ObjRef::SitePeering(PeeringId::from_idx(i)), cap.mtu));
        }
    }
    contrib.sort();
    for (c, o, m) in contrib {
        if let Some(comp) = t.components.get_mut(c.idx()) {
            comp.cap_objects.push(o);
            match comp.cap {
                Some((best, _)) if best <= m => {}
                _ => comp.cap = Some((m, o)),
            }
        }
    }
}
