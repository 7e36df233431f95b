//! The CNI configuration file: its `mtu` read, and rewritten in place through a temporary file
//! renamed over it.

use std::path::{Path, PathBuf};

use crate::cni;
use crate::error::{Error, Result};
use crate::model::CniState;

pub(super) fn read_cni(path: &Path) -> Result<CniState> {
    match std::fs::read_to_string(path) {
        Ok(text) => cni::read_mtu(&text)
            .map(CniState::Mtu)
            .map_err(|reason| Error::Cni {
                path: path.display().to_string(),
                reason,
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(CniState::Missing),
        Err(e) => Err(Error::Io {
            op: format!("read {}", path.display()),
            source: e,
        }),
    }
}

pub(super) fn write_cni(path: &Path, mtu: u32) -> Result<()> {
    let io = |op: &str, e| Error::Io {
        op: format!("{op} {}", path.display()),
        source: e,
    };
    let text = std::fs::read_to_string(path).map_err(|e| io("read", e))?;
    let out = cni::set_mtu(&text, mtu).map_err(|reason| Error::Cni {
        path: path.display().to_string(),
        reason,
    })?;
    let mut tmp: PathBuf = path.to_path_buf();
    let fname = path
        .file_name()
        .map(|f| format!(".{}.tmp", f.to_string_lossy()))
        .unwrap_or_else(|| ".cni.tmp".into());
    tmp.set_file_name(fname);
    std::fs::write(&tmp, out).map_err(|e| io("write", e))?;
    std::fs::rename(&tmp, path).map_err(|e| io("rename", e))
}
