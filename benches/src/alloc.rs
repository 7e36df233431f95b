//! A counting global allocator: every binary linking this crate (the criterion benchmarks and
//! `perf-budget`) counts allocations and allocated bytes, so allocation figures can be printed
//! next to times. It counts over mimalloc, the allocator of the `unbounded-mtu` binary, so the
//! figures are those of the allocator users run.
#![allow(unsafe_code)]

use mimalloc::MiMalloc;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

/// Wraps mimalloc; counts allocations (reallocations included) and bytes requested.
pub struct Counting;

// SAFETY: every call is forwarded unchanged to mimalloc; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { MiMalloc.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { MiMalloc.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { MiMalloc.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { MiMalloc.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations and bytes allocated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Allocs {
    /// Allocation calls (reallocations included).
    pub count: u64,
    /// Bytes requested.
    pub bytes: u64,
}

impl Allocs {
    /// Human form: `12.3 k allocs, 4.5 MB`.
    pub fn human(&self) -> String {
        format!(
            "{} allocs, {}",
            si(self.count as f64, ""),
            si(self.bytes as f64, "B")
        )
    }
}

fn si(v: f64, unit: &str) -> String {
    if v >= 1e9 {
        format!("{:.2} G{unit}", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2} M{unit}", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} k{unit}", v / 1e3)
    } else {
        format!("{v:.0} {unit}").trim_end().to_string()
    }
}

/// The counters now.
pub fn snapshot() -> Allocs {
    Allocs {
        count: ALLOCS.load(Ordering::Relaxed),
        bytes: BYTES.load(Ordering::Relaxed),
    }
}

/// Runs `f` and returns its result with the allocations it made (this thread's and others'
/// alike: run it when nothing else allocates).
pub fn counted<R>(f: impl FnOnce() -> R) -> (R, Allocs) {
    let a = snapshot();
    let r = f();
    let b = snapshot();
    (
        r,
        Allocs {
            count: b.count.saturating_sub(a.count),
            bytes: b.bytes.saturating_sub(a.bytes),
        },
    )
}
