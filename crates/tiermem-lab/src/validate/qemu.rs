//! The QEMU arguments of a scenario's machine: one memory backend and NUMA node per node,
//! the CPUs on the nodes that have them, SLIT distances, and HMAT latency and bandwidth of
//! every initiator-target pair (`-machine hmat=on`), so that a recording runs on the
//! machine the simulator models (`validation/record.sh`).
//!
//! HMAT figures come from the node's `read_latency` and `read_bandwidth`; an initiator on
//! another socket adds the machine's `cross_socket_latency`. QEMU takes bandwidth in bytes
//! per second with binary suffixes (`M` = MiB/s), and Linux reports it in MiB/s as "MB/s".

use tiermem_core::topology::MachineConfig;

/// The arguments, one per element (`-m`, `-smp`, `-object`, `-numa`).
pub fn args(m: &MachineConfig) -> Vec<String> {
    let mib = |b: u64| b.div_ceil(1 << 20);
    let total_mib: u64 = m.nodes.iter().map(|n| mib(n.capacity.0)).sum();
    let cpus: u32 = m.nodes.iter().map(|n| n.cpus).sum();
    let mut a = vec![
        "-m".to_string(),
        format!("{total_mib}M"),
        "-smp".into(),
        cpus.max(1).to_string(),
    ];
    let mut next_cpu = 0;
    for n in &m.nodes {
        a.push("-object".into());
        a.push(format!(
            "memory-backend-ram,id=m{},size={}M",
            n.id,
            mib(n.capacity.0)
        ));
        let mut node = format!("node,nodeid={},memdev=m{}", n.id, n.id);
        if n.cpus > 0 {
            node.push_str(&format!(",cpus={}-{}", next_cpu, next_cpu + n.cpus - 1));
            next_cpu += n.cpus;
        } else if let Some(init) = nearest_initiator(m, n.id) {
            node.push_str(&format!(",initiator={init}"));
        }
        a.push("-numa".into());
        a.push(node);
    }
    if let Some(d) = &m.distances {
        for (i, row) in d.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                if i < j {
                    a.push("-numa".into());
                    a.push(format!("dist,src={i},dst={j},val={v}"));
                }
            }
        }
    }
    for init in m.nodes.iter().filter(|n| n.cpus > 0) {
        for t in &m.nodes {
            let remote = if init.socket != t.socket {
                m.cross_socket_latency.ns_f64()
            } else {
                0.0
            };
            let lat = (t.read_latency.ns_f64() + remote).round().max(1.0) as u64;
            let bw = (t.read_bandwidth.bytes_per_s() / (1u64 << 20) as f64)
                .round()
                .max(1.0) as u64;
            for (kind, val) in [
                ("access-latency", format!("latency={lat}")),
                ("access-bandwidth", format!("bandwidth={bw}M")),
            ] {
                a.push("-numa".into());
                a.push(format!(
                    "hmat-lb,initiator={},target={},hierarchy=memory,data-type={kind},{val}",
                    init.id, t.id
                ));
            }
        }
    }
    a
}

/// The CPU node nearest to a CPU-less node (same socket first, else the first).
fn nearest_initiator(m: &MachineConfig, id: u8) -> Option<u8> {
    let me = m.nodes.iter().find(|n| n.id == id)?;
    m.nodes
        .iter()
        .filter(|n| n.cpus > 0)
        .min_by_key(|n| (n.socket != me.socket, n.id))
        .map(|n| n.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_node_vm_matches_the_agent_vm_tests() {
        let m: MachineConfig = toml::from_str(
            "distances = [[10, 20], [20, 10]]\n[[nodes]]\nid = 0\ncpus = 2\ncapacity = \"1GiB\"\nread_latency = \"80ns\"\nread_bandwidth = \"20GiB/s\"\n[[nodes]]\nid = 1\ncapacity = \"512MiB\"\nread_latency = \"240ns\"\nread_bandwidth = \"5GiB/s\"\n",
        )
        .unwrap();
        let a = args(&m).join(" ");
        assert!(a.starts_with("-m 1536M -smp 2 "), "{a}");
        assert!(a.contains("-numa node,nodeid=0,memdev=m0,cpus=0-1"), "{a}");
        assert!(
            a.contains("-numa node,nodeid=1,memdev=m1,initiator=0"),
            "{a}"
        );
        assert!(a.contains("-numa dist,src=0,dst=1,val=20"), "{a}");
        assert!(a.contains("hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-latency,latency=240"), "{a}");
        assert!(
            a.contains("target=0,hierarchy=memory,data-type=access-bandwidth,bandwidth=20480M"),
            "{a}"
        );
    }
}
