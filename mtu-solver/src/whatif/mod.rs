//! What-if: apply mutations to a base input and report every value that changes,
//! with its explanation after. Cap changes keep every object, link and path, so they are
//! answered per value: the nodes near the capped object are re-resolved, and elsewhere only the
//! learned routes whose next hops' `reach` changed (the cost follows what changed, not the
//! cluster). Other mutations re-resolve the nodes they can affect, or every node when the
//! forwarding itself changes.

mod apply;
mod classify;
mod diff;
mod digest;
mod engine;
mod entry;
mod input;
mod mutation;
mod reach;
mod text;

pub use apply::apply;
pub use diff::{Change, Strategy, WhatIf};
pub use digest::{Digest, DigestBuilder, Group, ItemKind, KindDigest};
pub(crate) use entry::what_if_over;
pub use entry::{compare, diff, what_if, what_if_on};
pub use input::{Base, Input};
pub use mutation::{Mutation, MutationError, check, check_all, first_refused};
pub use text::{ParseMutationError, VERBS};
