//! What this kernel can create: each flow-based tunnel kind and WireGuard, tried on a throwaway
//! device.

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{InfoKind, LinkAttribute, LinkInfo, LinkMessage};

use crate::Kernel;
use crate::model::Op;
use crate::types::TunnelKind;

use super::NetlinkKernel;

/// What this kernel can create (probed by creating and deleting a throwaway device).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probe {
    /// Flow-based VXLAN.
    pub vxlan: bool,
    /// Flow-based GENEVE.
    pub geneve: bool,
    /// Flow-based IPIP over IPv4.
    pub ipip: bool,
    /// Flow-based IPIP over IPv6 (`ip6tnl`).
    pub ip6tnl: bool,
    /// WireGuard devices (the adapter never creates them; reported for information).
    pub wireguard: bool,
    /// Why each missing kind failed (with errno and its class).
    pub missing: Vec<String>,
}

impl NetlinkKernel {
    /// Probes which flow-based tunnel kinds this kernel can create (creates and deletes
    /// `umtuprobe*` devices in the current namespace).
    pub fn probe(&mut self) -> Probe {
        let mut p = Probe::default();
        let kinds: [(&str, &str, Option<TunnelKind>); 5] = [
            ("vxlan", "umtuprobevx", Some(TunnelKind::Vxlan)),
            ("geneve", "umtuprobege", Some(TunnelKind::Geneve)),
            ("ipip", "umtuprobeip", Some(TunnelKind::Ipip)),
            ("ip6tnl", "umtuprobe6", Some(TunnelKind::Ip6Ip)),
            ("wireguard", "umtuprobewg", None),
        ];
        for (label, name, kind) in kinds {
            let name = name.to_string();
            let res = match kind {
                Some(k) => self.apply(&Op::CreateTunnel {
                    name: name.clone(),
                    kind: k,
                    mtu: 1280,
                    mac: [0x0a, 0x58, 0, 0, 0, 1],
                    port: 47000,
                }),
                None => {
                    let mut m = LinkMessage::default();
                    m.attributes.push(LinkAttribute::IfName(name.clone()));
                    m.attributes
                        .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(
                            InfoKind::Wireguard,
                        )]));
                    self.write(
                        RouteNetlinkMessage::NewLink(m),
                        NLM_F_CREATE | NLM_F_EXCL,
                        "link add type wireguard",
                    )
                }
            };
            let ok = match res {
                Ok(()) => {
                    let _ = self.apply(&Op::DeleteLink { link: name });
                    true
                }
                Err(e) => {
                    p.missing.push(format!("{label}: {e}"));
                    false
                }
            };
            match label {
                "vxlan" => p.vxlan = ok,
                "geneve" => p.geneve = ok,
                "ipip" => p.ipip = ok,
                "ip6tnl" => p.ip6tnl = ok,
                _ => p.wireguard = ok,
            }
        }
        p
    }
}
