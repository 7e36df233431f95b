//! What-if: apply mutations to a base input and report every value that changes,
//! with its explanation after. Cap changes keep every object, link and path, so they are
//! answered per value: the nodes near the capped object are re-resolved, and elsewhere only the
//! learned routes whose next hops' `reach` changed (the cost follows what changed, not the
//! cluster). Other mutations re-resolve the nodes they can affect, or every node when the
//! forwarding itself changes. What mutations change can also be written out for an operator
//! ([`manifests`]: a merge patch per changed object).

mod apply;
mod classify;
mod diff;
mod digest;
mod engine;
mod entry;
mod input;
mod manifests;
mod mutation;
mod reach;
mod text;
mod yaml;

pub use apply::{apply, apply_all};
pub use diff::{Change, Strategy, WhatIf};
pub use digest::{Digest, DigestBuilder, Group, ItemKind, KindDigest};
pub(crate) use entry::{changed_over, manifests_over, what_if_over};
pub use entry::{compare, diff, manifests, what_if, what_if_on};
pub use input::{Base, Input};
pub use manifests::{Manifest, Manifests, Unwritten};
pub use mutation::{Mutation, MutationError, check, check_all, first_refused};
pub use text::{ParseMutationError, VERBS};
