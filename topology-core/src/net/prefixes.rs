//! Queries on the topology's prefix table (which prefixes are advertised, by whom, and which of
//! them only one Site or pool originates), and cutting local CIDRs out of a prefix.

use super::*;
use ipnet::IpNet;
use smallvec::SmallVec;

impl<'t> Net<'t> {
    /// The origins of a learned prefix (empty when nothing advertises it).
    pub fn origins_of(&self, prefix: &IpNet) -> SmallVec<[Origin; 1]> {
        SmallVec::from_slice(self.topo.prefix_table().origins(prefix))
    }

    /// Per learned route, its prefix when only one Site or pool advertises it: one walk beside
    /// the prefix table when the routes come in prefix order (a node's list does), instead of a
    /// look-up per route; a route out of that order is looked up.
    pub fn sole_prefixes(&self, learned: &[Learned]) -> Vec<Option<SolePrefix>> {
        let table = self.topo.prefix_table();
        let mut at = 0usize;
        learned
            .iter()
            .map(|l| {
                while table
                    .entries
                    .get(at)
                    .is_some_and(|(p, _)| prefix_order(p, &l.prefix).is_lt())
                {
                    at = at.saturating_add(1);
                }
                match table.entries.get(at) {
                    Some((p, o)) if prefix_order(p, &l.prefix).is_eq() => {
                        (o.len() == 1).then(|| SolePrefix(u32::try_from(at).unwrap_or(u32::MAX)))
                    }
                    _ => self.sole_prefix(&l.prefix).map(|(i, _)| i),
                }
            })
            .collect()
    }

    /// A learned prefix that only one Site or pool advertises, with that origin (`None`: none
    /// or several do).
    pub fn sole_prefix(&self, prefix: &IpNet) -> Option<(SolePrefix, Origin)> {
        let table = self.topo.prefix_table();
        let i = table.position(prefix)?;
        match table.entries.get(usize::try_from(i).ok()?)?.1.as_slice() {
            [o] => Some((SolePrefix(i), *o)),
            _ => None,
        }
    }

    /// The origin of a learned prefix that only one Site or pool advertises (`None`: none or
    /// several do).
    pub fn sole_origin(&self, prefix: &IpNet) -> Option<Origin> {
        self.sole_prefix(prefix).map(|(_, o)| o)
    }

    /// How many prefixes are advertised: every [`SolePrefix`] is below.
    pub fn prefix_count(&self) -> usize {
        self.topo.prefix_table().entries.len()
    }

    /// The prefixes only one Site or pool advertises whose origin leads to a destination
    /// `to` accepts.
    pub fn sole_prefixes_leading_to(&self, to: impl Fn(Dest) -> bool) -> Vec<SolePrefix> {
        self.topo
            .prefix_table()
            .entries
            .iter()
            .zip(0u32..)
            .filter(|((_, o), _)| matches!(o.as_slice(), [o] if to(o.dest)))
            .map(|(_, i)| SolePrefix(i))
            .collect()
    }

    /// Every advertised prefix with its origins, in output order (gateway-only index).
    pub fn advertised_prefixes(&self) -> impl Iterator<Item = (&IpNet, &[Origin])> {
        self.topo
            .prefix_table()
            .entries
            .iter()
            .map(|(p, o)| (p, o.as_slice()))
    }
}

/// `prefix` with every one of `locals` cut out: the largest prefixes that remain, in order.
pub fn cut(prefix: IpNet, locals: &[IpNet]) -> Vec<IpNet> {
    let mut out = Vec::new();
    let mut stack = vec![prefix];
    while let Some(p) = stack.pop() {
        if locals.iter().any(|l| l.contains(&p)) {
            continue;
        }
        if !locals.iter().any(|l| p.contains(l)) {
            out.push(p);
            continue;
        }
        if let Ok(mut halves) = p.subnets(p.prefix_len().saturating_add(1)) {
            let a = halves.next();
            let b = halves.next();
            if let Some(b) = b {
                stack.push(b);
            }
            if let Some(a) = a {
                stack.push(a);
            }
        }
    }
    out.sort_by(prefix_order);
    out
}
