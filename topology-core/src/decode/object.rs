//! Reading one object of a recognised kind: its undefined keys, then its fields by a reader per
//! kind; every finding lands in the object's [`Meta`].

use super::fields::Cx;
use super::intern::Interner;
use super::raw::{Meta, RawObject};
use crate::diag::{Code, SourceLoc};
use crate::schema;
use crate::tree::Node;
use crate::vocab::Kind;
use std::sync::Arc;

impl Cx {
    /// A context for the object `kind/name` read from `source`.
    pub(super) fn new(source: &Arc<str>, kind: Kind, name: &str) -> Cx {
        Cx {
            source: source.clone(),
            object: format!("{}/{}", kind.as_str(), name),
            diags: Vec::new(),
            prefix: String::new(),
            reported: Vec::new(),
        }
    }

    /// Reads the object at `root`, named `name` and starting at `loc`.
    pub(super) fn read_object(
        mut self,
        kind: Kind,
        root: &Node,
        name: String,
        loc: Option<SourceLoc>,
        strings: &mut Interner,
    ) -> RawObject {
        self.unknown_fields(kind, root);
        let mut obj = match kind {
            Kind::Site => RawObject::Site(Box::new(self.site(root))),
            Kind::GatewayPool => RawObject::Pool(Box::new(self.pool(root))),
            Kind::Node => RawObject::Node(Box::new(self.node(root, strings))),
            Kind::SiteNodeSlice => RawObject::Slice(Box::new(self.slice(root))),
            Kind::GatewayPoolNode => {
                RawObject::GatewayPoolNode(Box::new(self.gateway_pool_node(root, &name)))
            }
            Kind::SitePeering => RawObject::SitePeering(Box::new(self.site_peering(root))),
            Kind::SiteGatewayPoolAssignment => {
                RawObject::Assignment(Box::new(self.assignment(root)))
            }
            Kind::GatewayPoolPeering => RawObject::PoolPeering(Box::new(self.pool_peering(root))),
        };
        *obj.meta_mut() = Meta {
            name,
            loc,
            diags: self.diags,
        };
        obj
    }

    /// `W-UNKNOWN-FIELD` for every key the kind's upstream schema does not define; the keys
    /// themselves are never read, so they count as absent.
    fn unknown_fields(&mut self, kind: Kind, root: &Node) {
        for u in schema::unknown_fields(kind, root) {
            let hint = u
                .suggestion
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            let msg = format!("{kind} has no field `{}`; it is ignored{hint}", u.field);
            self.report(Code::UnknownField, &u.field, u.line, msg);
        }
    }
}
