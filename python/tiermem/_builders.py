"""Python objects for configs: machines, kernel knobs, policies and workloads.

Each class mirrors one table of the config language (``docs/config.md``) field for field
and serialises, with :meth:`to_dict`, to exactly the dict (and, through
:func:`tiermem.to_toml`, the TOML) that the simulator reads. Nothing is checked here:
fields left at ``None`` are omitted so the simulator's default applies, and every value
is validated by the Rust config parser when the config is checked or run, so a bad value
raises :class:`tiermem.ConfigError` with the message the command line prints::

    import tiermem
    from tiermem import Config, Kernel, NumaBalancing, Pmbench

    cfg = Config(
        machine="small",
        duration="5s",
        kernel=Kernel(numa_balancing=2, demotion_enabled=True,
                      numa=NumaBalancing(promotion="rate-limit", promote_rate_limit_mbps=64)),
        workloads=[Pmbench(mapsize="1GiB", pattern="normal_ih", read_ratio=80)],
    )
    cfg.check()            # the effective config (defaults filled in) as a dict
    result = cfg.simulate()

Keys the classes do not have a field for yet can be passed in ``extra`` (a dict merged
into the table); the simulator still rejects keys it does not know. ``Config.from_toml``
and ``from_dict`` build the objects back from TOML or a dict.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Sequence, Type, Union

__all__ = [
    "CacheLevel",
    "Caches",
    "Config",
    "Kernel",
    "KernelCosts",
    "Machine",
    "MemPolicy",
    "Mlc",
    "Node",
    "NumaBalancing",
    "Pmbench",
    "Sim",
    "Stream",
    "Swap",
    "Workload",
    "Zram",
]

#: A size: bytes as an int, or a string with a unit (``"4GiB"``, ``"200MB"``).
Size = Union[int, str]
#: A duration string with a unit (``"80ns"``, ``"10ms"``, ``"2s"``).
Duration = str
#: A bandwidth: MB/s as a number, or a string ``"<size>/s"`` (``"24.5GB/s"``).
Bandwidth = Union[int, float, str]


def _plain(value: Any) -> Any:
    """A field value as plain data: builders become dicts, sequences lists."""
    if isinstance(value, _Table):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclass(repr=False)
class _Table:
    """Base of the config objects: dataclass fields are the table's keys."""

    #: Fields that are not keys of the table (see ``to_dict``).
    _META: ClassVar[frozenset] = frozenset({"extra"})
    #: Field name -> builder class of its value (or of its items, for lists).
    _NESTED: ClassVar[Dict[str, Type["_Table"]]] = {}

    # Marks instances for tiermem.to_toml, which serialises them with to_dict().
    _TIERMEM_TABLE: ClassVar[bool] = True

    @classmethod
    def keys(cls) -> List[str]:
        """The config keys this class has a field for, in declaration order."""
        return [f.name for f in dataclasses.fields(cls) if f.name not in cls._META]

    def to_dict(self) -> Dict[str, Any]:
        """The table as a dict; ``None`` fields are left out (the simulator's default)."""
        out: Dict[str, Any] = {}
        for name in self.keys():
            value = getattr(self, name)
            if value is not None:
                out[name] = _plain(value)
        extra = getattr(self, "extra", None)
        if extra:
            out.update(_plain(extra))
        return out

    def __repr__(self) -> str:
        # Only the fields that are set: the rest are the simulator's defaults.
        shown = [
            f"{f.name}={getattr(self, f.name)!r}"
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not None and getattr(self, f.name) != {}
        ]
        return f"{type(self).__name__}({', '.join(shown)})"

    def to_toml(self) -> str:
        """The table as TOML text (see :func:`tiermem.to_toml`)."""
        from ._config import to_toml

        return to_toml(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "_Table":
        """Build the object from a dict shaped like the config table.

        Keys without a field go to ``extra`` (the simulator validates them when the
        config is checked or run).
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"{cls.__name__}.from_dict needs a dict, not {type(data).__name__}")
        known = set(cls.keys())
        kwargs: Dict[str, Any] = {}
        extra: Dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                extra[key] = value
                continue
            sub = cls._NESTED.get(key)
            if sub is not None and isinstance(value, Mapping):
                value = sub.from_dict(value)
            elif sub is not None and isinstance(value, (list, tuple)):
                value = [sub.from_dict(v) if isinstance(v, Mapping) else v for v in value]
            kwargs[key] = value
        if extra:
            if "extra" not in {f.name for f in dataclasses.fields(cls)}:
                raise TypeError(f"{cls.__name__} has no key(s) {', '.join(sorted(extra))}")
            kwargs["extra"] = extra
        return cls(**kwargs)


# ---------------------------------------------------------------------------------------
# Machine
# ---------------------------------------------------------------------------------------


@dataclass(repr=False)
class Node(_Table):
    """A NUMA node, ``[[machine.nodes]]`` (``/sys/devices/system/node/nodeN``).

    ``id`` must equal the node's position; CPU-less nodes (``cpus = 0``) are how PMEM and
    CXL memory appear. Latencies and bandwidths are the HMAT figures.
    """

    id: int
    capacity: Optional[Size] = None
    read_latency: Optional[Duration] = None
    read_bandwidth: Optional[Bandwidth] = None
    cpus: Optional[int] = None
    socket: Optional[int] = None
    kind: Optional[str] = None
    write_latency: Optional[Duration] = None
    write_bandwidth: Optional[Bandwidth] = None
    curve: Optional[Union[str, Mapping[str, Any]]] = None
    duplex: Optional[bool] = None
    adistance: Optional[int] = None
    #: Memory held from the start by the kernel and other programs (``MemTotal - MemFree``
    #: of an idle host); ``tiermem validate`` sets it from a recording.
    reserved: Optional[Size] = None
    #: Free memory in the per-CPU pagesets at the start and their summed ``high`` marks
    #: (``/proc/zoneinfo``); ``tiermem validate`` sets them from a recording.
    pagesets: Optional[Size] = None
    pagesets_high: Optional[Size] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(repr=False)
class CacheLevel(_Table):
    """One cache level of ``[machine.caches]``: ``l1d``, ``l2`` or ``llc``.

    ``size`` is one instance (one core's L1d or L2, one LLC domain); all three keys are
    required when the level is given.
    """

    size: Optional[Size] = None
    ways: Optional[int] = None
    latency: Optional[Duration] = None

    _META: ClassVar[frozenset] = frozenset()


@dataclass(repr=False)
class Caches(_Table):
    """``[machine.caches]``: the CPU caches trace replay puts in front of memory.

    Every key is optional (a preset's values merge with yours); ``enabled=False`` replays
    every access to memory. See docs/model.md, "CPU caches for replayed accesses".
    """

    enabled: Optional[bool] = None
    l1d: Optional[CacheLevel] = None
    l2: Optional[CacheLevel] = None
    llc: Optional[CacheLevel] = None
    llc_cores: Optional[int] = None
    prefetch: Optional[bool] = None
    prefetch_distance: Optional[int] = None

    _META: ClassVar[frozenset] = frozenset()
    _NESTED: ClassVar[Dict[str, Type[_Table]]] = {"l1d": CacheLevel, "l2": CacheLevel, "llc": CacheLevel}


@dataclass(repr=False)
class Machine(_Table):
    """The hardware, ``[machine]``: a preset (optionally with overrides) or full nodes.

    With ``preset``, the other fields are deep-merged into the preset by the simulator;
    ``nodes`` and ``distances`` then replace the preset's whole arrays.
    """

    nodes: Optional[List[Node]] = None
    preset: Optional[str] = None
    name: Optional[str] = None
    distances: Optional[List[List[int]]] = None
    cross_socket_latency: Optional[Duration] = None
    adistance: Optional[str] = None
    cpu_per_access: Optional[Duration] = None
    remote_latency: Optional[str] = None
    caches: Optional[Caches] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    _META: ClassVar[frozenset] = frozenset({"extra"})
    _NESTED: ClassVar[Dict[str, Type[_Table]]] = {"nodes": Node, "caches": Caches}

    @classmethod
    def from_preset(cls, preset: str, /, **overrides: Any) -> "Machine":
        """A built-in machine (``tiermem.machine_presets()``), with optional overrides
        (``Machine.from_preset("small", name="mine")``)."""
        return cls(preset=preset, **overrides)


# ---------------------------------------------------------------------------------------
# Kernel
# ---------------------------------------------------------------------------------------


@dataclass(repr=False)
class NumaBalancing(_Table):
    """``[kernel.numa]``: the NUMA-balancing scanner and the tiering promotion policy.

    ``promotion`` picks the generation of ``should_numa_migrate_memory``: ``"mru"``,
    ``"hot-threshold"``, ``"rate-limit"`` or ``"auto-threshold"`` (the default).
    """

    scan_delay_ms: Optional[int] = None
    scan_period_min_ms: Optional[int] = None
    scan_period_max_ms: Optional[int] = None
    scan_size_mb: Optional[int] = None
    hot_threshold_ms: Optional[int] = None
    promote_rate_limit_mbps: Optional[int] = None
    promotion: Optional[str] = None
    promote_ignore_watermarks: Optional[bool] = None
    model_scale: Optional[int] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(repr=False)
class Swap(_Table):
    """``[kernel.swap]``: a block swap device."""

    capacity: Optional[Size] = None
    read_latency: Optional[Duration] = None
    write_bandwidth: Optional[Bandwidth] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(repr=False)
class Zram(_Table):
    """``[kernel.zram]``: a compressed RAM swap device, used before ``swap``."""

    capacity: Optional[Size] = None
    compression_ratio: Optional[float] = None
    compress_cost: Optional[Duration] = None
    decompress_cost: Optional[Duration] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(repr=False)
class KernelCosts(_Table):
    """``[kernel.costs]``: CPU costs of kernel paths (assumptions, see docs/model.md)."""

    anon_fault: Optional[Duration] = None
    zero_page_fault: Optional[Duration] = None
    swapin_fault: Optional[Duration] = None
    alloc_slowpath: Optional[Duration] = None
    reclaim_scan_page: Optional[Duration] = None
    reclaim_unmap_page: Optional[Duration] = None
    migrate_page: Optional[Duration] = None
    numa_scan_pte: Optional[Duration] = None
    numa_pte_update: Optional[Duration] = None
    numa_hint_fault: Optional[Duration] = None
    task_wakeup: Optional[Duration] = None
    file_read_page: Optional[Duration] = None
    file_copy_page: Optional[Duration] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(repr=False)
class Kernel(_Table):
    """``[kernel]``: the simulated kernel's knobs (the kernel's defaults when omitted).

    ``numa_balancing`` is the ``/proc/sys/kernel/numa_balancing`` bit field (2 = memory
    tiering); ``demotion_enabled`` is ``/sys/kernel/mm/numa/demotion_enabled``.
    """

    #: The kernel release to model where releases differ (``"6.12"``); see docs/config.md.
    release: Optional[str] = None
    watermark_scale_factor: Optional[int] = None
    min_free_kbytes: Optional[int] = None
    demotion_enabled: Optional[bool] = None
    numa_balancing: Optional[int] = None
    #: ``/sys/kernel/mm/transparent_hugepage/enabled``: only ``"never"`` is modelled.
    transparent_hugepage: Optional[str] = None
    #: ``/sys/kernel/mm/lru_gen/enabled``: only ``False`` is modelled.
    lru_gen: Optional[bool] = None
    numa: Optional[NumaBalancing] = None
    swap: Optional[Swap] = None
    zram: Optional[Zram] = None
    costs: Optional[KernelCosts] = None
    #: ``[kernel.weighted_interleave]``, ``[kernel.damon]`` and ``[kernel.ksm]`` as plain
    #: tables (see docs/config.md).
    weighted_interleave: Optional[Mapping[str, Any]] = None
    damon: Optional[Mapping[str, Any]] = None
    ksm: Optional[Mapping[str, Any]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    _NESTED: ClassVar[Dict[str, Type[_Table]]] = {
        "numa": NumaBalancing,
        "swap": Swap,
        "zram": Zram,
        "costs": KernelCosts,
    }


@dataclass(repr=False)
class Sim(_Table):
    """``[sim]``: engine settings (timing window, timeline sample interval, engine:
    ``"access"``, ``"events"`` or ``"auto"``)."""

    tick: Optional[Duration] = None
    sample_interval: Optional[Duration] = None
    engine: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------
# Workloads and memory policies
# ---------------------------------------------------------------------------------------


@dataclass(repr=False)
class MemPolicy(_Table):
    """A task memory policy (``set_mempolicy``): ``mode`` and its node set."""

    mode: str = "default"
    nodes: Optional[List[int]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def default(cls) -> "MemPolicy":
        """``MPOL_DEFAULT``: the local node, then the zonelist."""
        return cls("default")

    @classmethod
    def bind(cls, nodes: Sequence[int]) -> "MemPolicy":
        """``MPOL_BIND``: only these nodes, nearest first."""
        return cls("bind", list(nodes))

    @classmethod
    def preferred(cls, node: int) -> "MemPolicy":
        """``MPOL_PREFERRED``: this node, falling back along the zonelist."""
        return cls("preferred", [node])


@dataclass(repr=False)
class Workload(_Table):
    """Base of the workload tables (``[[workloads]]``); ``TYPE`` is the ``type`` key."""

    TYPE: ClassVar[str] = ""
    _META: ClassVar[frozenset] = frozenset({"extra"})
    _NESTED: ClassVar[Dict[str, Type[_Table]]] = {"policy": MemPolicy}

    def to_dict(self) -> Dict[str, Any]:
        return {"type": self.TYPE, **super().to_dict()}

    @staticmethod
    def from_any(data: Mapping[str, Any]) -> "Workload":
        """The workload object of a ``[[workloads]]`` dict, by its ``type``."""
        kind = data.get("type")
        cls = _WORKLOADS.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise ValueError(
                f"unknown workload type {kind!r}: expected one of {', '.join(_WORKLOADS)}"
            )
        return cls.from_dict({k: v for k, v in data.items() if k != "type"})  # type: ignore[return-value]


@dataclass(repr=False)
class Pmbench(Workload):
    """pmbench: page-granular access over an anonymous map (``-m``, ``-s``, ``-p``, ``-r``)."""

    TYPE: ClassVar[str] = "pmbench"

    name: Optional[str] = None
    processes: Optional[int] = None
    threads: Optional[int] = None
    mapsize: Optional[Size] = None
    setsize: Optional[Size] = None
    pattern: Optional[str] = None
    shape: Optional[float] = None
    stride: Optional[int] = None
    read_ratio: Optional[int] = None
    initialize: Optional[bool] = None
    cold: Optional[bool] = None
    duration: Optional[Duration] = None
    cpu_nodes: Optional[List[int]] = None
    policy: Optional[MemPolicy] = None
    cpu_per_access: Optional[Duration] = None
    start: Optional[Duration] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(repr=False)
class Stream(Workload):
    """STREAM: Copy, Scale, Add and Triad over three arrays."""

    TYPE: ClassVar[str] = "stream"

    name: Optional[str] = None
    array_elements: Optional[int] = None
    threads: Optional[int] = None
    ntimes: Optional[int] = None
    cpu_node: Optional[int] = None
    policy: Optional[MemPolicy] = None
    mlp: Optional[int] = None
    nt_stores: Optional[bool] = None
    cpu_per_line: Optional[Duration] = None
    start: Optional[Duration] = None
    #: ``[[workloads.mbind]]`` region policies and how regions are populated.
    mbind: Optional[List[Mapping[str, Any]]] = None
    populate: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(repr=False)
class Mlc(Workload):
    """Intel MLC: bandwidth threads with an inject delay plus a latency thread."""

    TYPE: ClassVar[str] = "mlc"

    name: Optional[str] = None
    traffic: Optional[str] = None
    bw_threads: Optional[int] = None
    delay_cycles: Optional[int] = None
    cpu_ghz: Optional[float] = None
    buffer: Optional[Size] = None
    mlp: Optional[int] = None
    latency_thread: Optional[bool] = None
    latency_buffer: Optional[Size] = None
    cpu_node: Optional[int] = None
    policy: Optional[MemPolicy] = None
    duration: Optional[Duration] = None
    start: Optional[Duration] = None
    mbind: Optional[List[Mapping[str, Any]]] = None
    populate: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)


_WORKLOADS: Dict[str, Type[Workload]] = {"pmbench": Pmbench, "stream": Stream, "mlc": Mlc}


# ---------------------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------------------


@dataclass(repr=False)
class Config(_Table):
    """A whole simulation config: machine, kernel, engine settings and workloads.

    ``machine`` is a preset name, a :class:`Machine` or a dict. Pass a ``Config``
    wherever a config is taken (:func:`tiermem.simulate`, :func:`tiermem.sweep`).
    """

    machine: Union[str, Machine, Mapping[str, Any], None] = None
    workloads: List[Workload] = field(default_factory=list)
    kernel: Optional[Kernel] = None
    sim: Optional[Sim] = None
    seed: Optional[int] = None
    duration: Optional[Duration] = None
    #: How often the user-space controllers act (the agent's ``interval``).
    interval: Optional[Duration] = None
    #: ``[tiering]``: the agent's user-space tiering controller, as in the agent's file.
    tiering: Optional[Dict[str, Any]] = None
    #: ``[reclaim]``: the agent's proactive reclaim (``processes`` only in a simulation).
    reclaim: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    _NESTED: ClassVar[Dict[str, Type[_Table]]] = {"machine": Machine, "kernel": Kernel, "sim": Sim}

    def to_dict(self) -> Dict[str, Any]:
        out = super().to_dict()
        if not out.get("workloads"):
            out.pop("workloads", None)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Config":
        data = dict(data)
        workloads = data.pop("workloads", [])
        if not isinstance(workloads, (list, tuple)):
            raise TypeError("workloads must be a list of tables")
        cfg = super().from_dict(data)
        cfg.workloads = [Workload.from_any(w) if isinstance(w, Mapping) else w for w in workloads]  # type: ignore[attr-defined]
        return cfg  # type: ignore[return-value]

    @classmethod
    def from_toml(cls, source: Union[str, "os.PathLike[str]"]) -> "Config":
        """Read a config file (a path) or TOML text into a :class:`Config`.

        The TOML is only parsed here; validation happens in :meth:`check` or when run.
        """
        from ._config import read_toml

        if isinstance(source, os.PathLike) or (
            isinstance(source, str) and "\n" not in source and source.strip().endswith(".toml")
        ):
            path = Path(source)
            return cls.from_dict(read_toml(path.read_text(encoding="utf-8"), str(path)))
        return cls.from_dict(read_toml(str(source), "<string>"))

    def check(self) -> Dict[str, Any]:
        """Validate with the simulator's parser; the effective config (defaults filled in).

        Raises:
            ConfigError: the config is invalid (the message names the key).
        """
        from . import check_config

        return check_config(self)

    def simulate(self, **kwargs: Any) -> Any:
        """Run this config: :func:`tiermem.simulate` with the same keyword arguments."""
        from . import simulate

        return simulate(self, **kwargs)
