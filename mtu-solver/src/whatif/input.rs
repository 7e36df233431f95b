//! The input a what-if question is asked about.

use crate::solver::Settings;
use topology_core::decode::RawObject;
use topology_core::diag::Diagnostic;
use topology_core::model::Topology;

/// The input of a resolve: decoded objects, decoder findings and settings.
#[derive(Clone, Debug, Default)]
pub struct Input {
    /// Decoded objects.
    pub objects: Vec<RawObject>,
    /// Findings that belong to no object.
    pub diagnostics: Vec<Diagnostic>,
    /// Settings.
    pub settings: Settings,
}

impl Input {
    /// Builds the validated topology of this input.
    pub fn topology(&self) -> Topology {
        Topology::build(self.objects.iter(), self.diagnostics.iter().cloned())
    }
}
