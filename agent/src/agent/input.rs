//! One turn's input as a source hands it to the reconcile: how it differs from the input of the
//! last plan applied (a [`Delta`], known before anything is decoded or built), and its objects,
//! decoded in [`Piece`]s that a source may keep and share across turns.

use mtu_solver::locality::Delta;
use std::sync::Arc;
use topology_core::decode::{Decoded, RawObject};
use topology_core::diag::Diagnostic;

/// Some of an input's objects, decoded, and the decoder's findings that belong to none of them.
#[derive(Debug, Default)]
pub struct Piece {
    objects: Vec<RawObject>,
    diagnostics: Vec<Diagnostic>,
}

impl Piece {
    /// The objects and findings of a decode.
    pub fn of(decoded: Decoded) -> Piece {
        Piece {
            objects: decoded.objects,
            diagnostics: decoded.diagnostics,
        }
    }

    /// Its objects.
    pub fn objects(&self) -> &[RawObject] {
        &self.objects
    }

    /// Its findings that belong to no object.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

/// Pieces, shared as one list (a source keeps one per cache and hands it to every turn while
/// the cache is the same).
pub type Pieces = Arc<[Arc<Piece>]>;

/// An input's objects: lists of pieces, in order.
#[derive(Clone, Debug, Default)]
pub struct Objects {
    lists: Vec<Pieces>,
}

impl Objects {
    /// The objects of these lists of pieces.
    pub fn new(lists: Vec<Pieces>) -> Objects {
        Objects { lists }
    }

    fn pieces(&self) -> impl Iterator<Item = &Piece> {
        self.lists.iter().flat_map(|l| l.iter().map(|p| &**p))
    }

    /// Every object, piece by piece.
    pub fn iter(&self) -> impl Iterator<Item = &RawObject> {
        self.pieces().flat_map(|p| p.objects.iter())
    }

    /// Every finding that belongs to no object, piece by piece.
    pub fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.pieces().flat_map(|p| p.diagnostics.iter())
    }
}

/// One turn's input: how it differs from the input of the plan in the kernel now, and its
/// objects, handed over when the turn resolves (a turn whose change cannot reach the plan
/// never asks for them).
pub struct Input {
    delta: Delta,
    objects: Box<dyn FnOnce() -> Objects + Send>,
}

impl Input {
    /// An input that differs by `delta`, its objects made by `objects` when needed.
    pub fn new(delta: Delta, objects: impl FnOnce() -> Objects + Send + 'static) -> Input {
        Input {
            delta,
            objects: Box::new(objects),
        }
    }

    /// How it differs from the input of the last turn that applied a plan (as the source last
    /// heard through `Source::settled`).
    pub fn delta(&self) -> &Delta {
        &self.delta
    }

    /// Its objects.
    pub fn objects(self) -> Objects {
        (self.objects)()
    }
}
