//! The search for the largest packet a path carries, packetization-layer style (RFC 4821,
//! RFC 8899): only answers count, never the ICMP errors a router may or may not send back.

/// What one probe of one size found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Answer {
    /// The destination answered a packet of that size.
    Answered,
    /// Nothing came back in time.
    Lost,
    /// The sender's own kernel refused the size (larger than the local device allows).
    TooBig,
}

/// Bounds and patience of one search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Search {
    /// The smallest size tried (576: every IPv4 path carries it).
    pub min: u32,
    /// The largest size tried (the local device's MTU, or a link MTU plus one).
    pub max: u32,
    /// Tries per size before it counts as not carried: one lost probe never lowers the result.
    pub attempts: u32,
    /// The size the plan expects the path to carry, tried first: a path that matches the plan
    /// costs one or two probes (this size, then the next one up).
    pub expect: Option<u32>,
}

/// What a search found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// The largest size answered; `None` when not even `min` was.
    pub largest: Option<u32>,
    /// Probes sent (every try counts).
    pub probes: u32,
}

impl Search {
    /// Finds the largest size in `[min, max]` that `probe` gets answered. A size counts as
    /// carried when any of its `attempts` tries is answered, and as not carried after
    /// `attempts` losses or one local refusal. The expected size is tried first, then `max`
    /// when the expected size was carried (headroom), else `min` (a silent peer costs
    /// `attempts` probes of each); then a binary search between the largest size carried and
    /// the smallest not carried. Sizes carried are assumed to be a prefix of the range, as a
    /// path MTU is.
    /// Costs up to `attempts` probes per size tried: two sizes, then about log2(max − min) more.
    ///
    /// ```
    /// use mtu_solver::probe::{Answer, Search};
    /// // A fake sender: the path carries up to 1450 bytes, and larger probes are lost.
    /// let path = |size: u32| if size <= 1450 { Answer::Answered } else { Answer::Lost };
    /// let search = Search { min: 576, max: 1500, attempts: 2, expect: Some(1458) };
    /// assert_eq!(search.run(path).largest, Some(1450));
    /// // A path that matches the plan: one probe of the expected size, two of the next one up.
    /// let fits = Search { expect: Some(1450), max: 1451, ..search }.run(path);
    /// assert_eq!((fits.largest, fits.probes), (Some(1450), 3));
    /// assert_eq!(search.run(|_| Answer::Lost).largest, None); // a silent peer
    /// ```
    pub fn run(&self, mut probe: impl FnMut(u32) -> Answer) -> Found {
        let mut probes = 0u32;
        let attempts = self.attempts.max(1);
        let mut carried = |size: u32| -> bool {
            for _ in 0..attempts {
                probes = probes.saturating_add(1);
                match probe(size) {
                    Answer::Answered => return true,
                    Answer::TooBig => return false,
                    Answer::Lost => {}
                }
            }
            false
        };
        let (min, max) = (self.min, self.max.max(self.min));
        let first = self.expect.map_or(max, |e| e.clamp(min, max));
        // `lo`: largest size known carried; `hi`: smallest known not carried.
        let (lo, hi) = if carried(first) {
            if first == max || carried(max) {
                (max, None)
            } else {
                (first, Some(max))
            }
        } else if first == min || !carried(min) {
            (min, Some(min))
        } else {
            (min, Some(first))
        };
        let largest = match hi {
            None => Some(lo),
            Some(hi) if hi == lo => None,
            Some(mut hi) => {
                let mut lo = lo;
                // `lo < hi` throughout, so the differences cannot underflow.
                while hi.saturating_sub(lo) > 1 {
                    let mid = lo.saturating_add(hi.saturating_sub(lo) / 2);
                    if carried(mid) {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                Some(lo)
            }
        };
        Found { largest, probes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path carrying up to `mtu`, a local device of `device`, losing the tries listed in
    /// `lose` (by global try number, from 0) and every probe when `silent`.
    struct Path {
        mtu: u32,
        device: u32,
        lose: Vec<u32>,
        silent: bool,
        tries: u32,
        sizes: Vec<u32>,
    }

    impl Path {
        fn new(mtu: u32, device: u32) -> Path {
            Path {
                mtu,
                device,
                lose: Vec::new(),
                silent: false,
                tries: 0,
                sizes: Vec::new(),
            }
        }
        fn probe(&mut self, size: u32) -> Answer {
            let n = self.tries;
            self.tries += 1;
            self.sizes.push(size);
            if size > self.device {
                Answer::TooBig
            } else if self.silent || size > self.mtu || self.lose.contains(&n) {
                Answer::Lost
            } else {
                Answer::Answered
            }
        }
    }

    fn search(max: u32) -> Search {
        Search {
            min: 576,
            max,
            attempts: 3,
            expect: None,
        }
    }

    #[test]
    fn a_healthy_path_costs_one_probe() {
        let mut p = Path::new(1500, 1500);
        let f = search(1500).run(|s| p.probe(s));
        assert_eq!(
            f,
            Found {
                largest: Some(1500),
                probes: 1
            }
        );
    }

    #[test]
    fn a_black_hole_is_found_to_the_byte() {
        for mtu in [577, 1000, 1399, 1400, 1401, 1499] {
            let mut p = Path::new(mtu, 1500);
            let f = search(1500).run(|s| p.probe(s));
            assert_eq!(f.largest, Some(mtu), "path {mtu}");
            // Each size not carried costs every attempt; the rest one probe.
            assert!(f.probes <= 3 * 11 + 2, "{} probes for {mtu}", f.probes);
        }
    }

    #[test]
    fn single_lost_probes_do_not_lower_the_result() {
        // Every carried size loses its first try (tries 0, then after each answer the next).
        let mut p = Path::new(1400, 1500);
        // Lose one try of each of the first 40 sizes' first attempt: tries 0, 3, 6...
        p.lose = (0..200).step_by(3).collect();
        let f = search(1500).run(|s| p.probe(s));
        assert_eq!(f.largest, Some(1400));
        let mut p = Path::new(1500, 1500);
        p.lose = vec![0, 1];
        let f = search(1500).run(|s| p.probe(s));
        assert_eq!(
            f,
            Found {
                largest: Some(1500),
                probes: 3
            }
        );
    }

    #[test]
    fn consistent_loss_does_lower_it() {
        // Every try of 1400 and above lost (a filter, not bad luck): the result is below.
        let mut p = Path::new(1399, 1500);
        let f = search(1500).run(|s| p.probe(s));
        assert_eq!(f.largest, Some(1399));
        // A lossy path that loses all three tries of a carried size lowers the result: the
        // search cannot tell, and reports what it saw carried.
        let mut p = Path::new(1500, 1500);
        p.lose = vec![0, 1, 2];
        let f = search(1500).run(|s| p.probe(s));
        assert!(f.largest.is_some_and(|l| l < 1500), "{f:?}");
    }

    #[test]
    fn a_silent_peer_is_unreachable_after_two_sizes() {
        let mut p = Path::new(1500, 1500);
        p.silent = true;
        let f = search(1500).run(|s| p.probe(s));
        assert_eq!(
            f,
            Found {
                largest: None,
                probes: 6
            }
        );
        assert_eq!(p.sizes, vec![1500, 1500, 1500, 576, 576, 576]);
    }

    #[test]
    fn a_local_refusal_is_final_and_never_retried() {
        // Searching up to a link MTU plus one over a device of exactly the link MTU.
        let mut p = Path::new(9000, 1450);
        let f = search(1451).run(|s| p.probe(s));
        assert_eq!(f.largest, Some(1450));
        assert_eq!(p.sizes.iter().filter(|s| **s == 1451).count(), 1);
    }

    #[test]
    fn degenerate_bounds() {
        let mut p = Path::new(1500, 1500);
        let f = Search {
            min: 576,
            max: 576,
            attempts: 0,
            expect: None,
        }
        .run(|s| p.probe(s));
        assert_eq!(
            f,
            Found {
                largest: Some(576),
                probes: 1
            }
        );
        let mut p = Path::new(500, 1500);
        let f = Search {
            min: 576,
            max: 100,
            attempts: 2,
            expect: None,
        }
        .run(|s| p.probe(s));
        assert_eq!(
            f,
            Found {
                largest: None,
                probes: 2
            }
        );
    }

    fn expecting(max: u32, expect: u32) -> Search {
        Search {
            expect: Some(expect),
            ..search(max)
        }
    }

    #[test]
    fn a_path_as_planned_costs_two_probes() {
        // A tunnel searched up to its link MTU plus one, over a device of the link MTU.
        let mut p = Path::new(9000, 1450);
        let f = expecting(1451, 1450).run(|s| p.probe(s));
        assert_eq!(
            f,
            Found {
                largest: Some(1450),
                probes: 2
            }
        );
        assert_eq!(p.sizes, vec![1450, 1451]);
        // An underlay as planned, at the device's MTU: one probe.
        let mut p = Path::new(1500, 1500);
        let f = expecting(1500, 1500).run(|s| p.probe(s));
        assert_eq!(
            f,
            Found {
                largest: Some(1500),
                probes: 1
            }
        );
    }

    #[test]
    fn expected_sizes_find_black_holes_and_headroom_to_the_byte() {
        for (path, expect) in [
            (1400, 1500),
            (1350, 1450),
            (1500, 1400),
            (1450, 1400),
            (577, 1500),
        ] {
            let mut p = Path::new(path, 1500);
            let f = expecting(1500, expect).run(|s| p.probe(s));
            assert_eq!(f.largest, Some(path), "path {path}, expected {expect}");
        }
        let mut p = Path::new(1500, 1500);
        p.silent = true;
        let f = expecting(1500, 1400).run(|s| p.probe(s));
        assert_eq!(
            f,
            Found {
                largest: None,
                probes: 6
            }
        );
        assert_eq!(p.sizes, vec![1400, 1400, 1400, 576, 576, 576]);
    }
}
