//! The agent's one backoff, for watch reconnects, adoption and reconcile retries: kube-runtime's
//! exponential backoff (`backon`) from 1 s doubling to 60 s, each delay stretched by a random
//! jitter of up to its own length (as client-go's reflector does), reset after a success.

use kube::runtime::watcher::ExponentialBackoff;
use std::time::Duration;

/// Exponential backoff with jitter; also the backoff of kube-runtime's watcher streams.
pub struct Backoff {
    inner: ExponentialBackoff,
    min: Duration,
    max: Duration,
}

impl std::fmt::Debug for Backoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backoff")
            .field("min", &self.min)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl Backoff {
    /// Delays from `min` doubling to `max`, each with a jitter of up to its own length.
    pub fn new(min: Duration, max: Duration) -> Backoff {
        let builder = backon::ExponentialBuilder::default()
            .with_min_delay(min)
            .with_max_delay(max)
            .with_factor(2.0)
            .with_jitter()
            .without_max_times();
        Backoff {
            inner: builder.into(),
            min,
            max,
        }
    }

    /// The agent's backoff: 1 s doubling to 60 s.
    pub fn watch() -> Backoff {
        Backoff::new(Duration::from_secs(1), Duration::from_secs(60))
    }

    /// The first step (the shortest delay).
    pub fn base(&self) -> Duration {
        self.min
    }

    /// The next delay, and advance.
    pub fn next_delay(&mut self) -> Duration {
        self.inner.next().unwrap_or(self.max)
    }

    /// Back to the first step (after a success).
    pub fn reset(&mut self) {
        kube::runtime::utils::Backoff::reset(&mut self.inner);
    }
}

/// Each step of the watcher's backoff (`WatchStreamExt::backoff` sleeps this long after an error).
impl Iterator for Backoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(self.next_delay())
    }
}

/// `WatchStreamExt::backoff` resets it after a stream item that is not an error.
impl kube::runtime::utils::Backoff for Backoff {
    fn reset(&mut self) {
        Backoff::reset(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_the_cap_with_jitter_of_up_to_one_step_and_resets() {
        let mut b = Backoff::watch();
        let mut base = Duration::from_secs(1);
        for _ in 0..9 {
            let d = b.next_delay();
            assert!(d >= base && d <= base * 2, "{d:?} for step {base:?}");
            base = (base * 2).min(Duration::from_secs(60));
        }
        b.reset();
        let d = b.next_delay();
        assert!(
            d >= Duration::from_secs(1) && d <= Duration::from_secs(2),
            "{d:?}"
        );
    }
}
