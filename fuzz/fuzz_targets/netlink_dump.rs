//! Any datagram on the netlink socket, read as the reply to a dump: its messages (lying and
//! truncated lengths, unknown types, malformed attributes) decoded as the adapter decodes them,
//! links and routes read. No panic, and no more links and routes than the datagram has room
//! for messages (16 header bytes each).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (links, routes) = dataplane_linux::fuzzing::read_dump(data);
    assert!(
        links + routes <= data.len() / 16,
        "{links} links and {routes} routes"
    );
});
