//! Capped exponential backoff with jitter; also the backoff of kube-runtime's watcher streams.

use std::time::Duration;

/// Doubling delays from `min` to `max`, each stretched by a random jitter of up to `jitter`
/// (a fraction: 0.2 = up to 20 % longer). Never shorter than the current step.
#[derive(Clone, Debug)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    jitter: f64,
    next: Duration,
}

impl Backoff {
    /// A backoff from `min` doubling to `max`.
    pub fn new(min: Duration, max: Duration, jitter: f64) -> Backoff {
        Backoff {
            min,
            max,
            jitter: jitter.clamp(0.0, 1.0),
            next: min,
        }
    }

    /// Watch reconnects: 1 s doubling to 60 s, up to 20 % jitter.
    pub fn watch() -> Backoff {
        Backoff::new(Duration::from_secs(1), Duration::from_secs(60), 0.2)
    }

    /// The step the next delay is based on (without jitter).
    pub fn base(&self) -> Duration {
        self.next
    }

    /// The next delay, and advance.
    pub fn next_delay(&mut self) -> Duration {
        let base = self.next;
        self.next = base.saturating_mul(2).min(self.max);
        base.mul_f64(1.0 + self.jitter * fastrand::f64())
    }

    /// Back to the first step (after a stream that delivered something).
    pub fn reset(&mut self) {
        self.next = self.min;
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
    fn doubles_caps_and_jitters_upwards() {
        let mut b = Backoff::watch();
        let mut bases = Vec::new();
        for _ in 0..9 {
            let base = b.base();
            let d = b.next_delay();
            assert!(d >= base && d <= base.mul_f64(1.2), "{d:?} vs {base:?}");
            bases.push(base.as_secs());
        }
        assert_eq!(bases, vec![1, 2, 4, 8, 16, 32, 60, 60, 60]);
        b.reset();
        assert_eq!(b.base(), Duration::from_secs(1));
    }
}
