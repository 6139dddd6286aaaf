"""NCCL settings: HCA order follows the rail map; RoCE traffic class carries the lossless DSCP; IB service level."""

from __future__ import annotations

from pathlib import Path

from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES


def _env(content: bytes) -> dict[str, str]:
    lines = [line for line in content.decode().splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def test_dgx_h100_hca_order_follows_gpus() -> None:
    artifacts = {a.path: a.content for a in render_spec(compile_spec(INVENTORIES / "h100-4su.yaml"))}
    env = _env(artifacts["hosts/dgx-h100/nccl.env"])
    # DGX H100 rail map: GPU0 mlx5_0, GPU1 mlx5_3, GPU2 mlx5_4, GPU3 mlx5_5, GPU4 mlx5_6, GPU5 mlx5_9, ...
    assert env["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"
    assert env["NCCL_SOCKET_IFNAME"] == "=bond0", "the in-band bond holds the address, not its members"
    # tenant-a: at P_Key index 0 (indx0), SL 1 in qos-policy.conf and partitions.conf
    assert env["NCCL_IB_PKEY"] == "0" and env["UCX_IB_PKEY"] == "0x0001"
    assert env["NCCL_IB_SL"] == env["UCX_IB_SL"] == "1" and "NCCL_IB_TC" not in env
    assert not [p for p in artifacts if p.startswith("hosts/ufm-appliance")], "management nodes run no NCCL jobs"


def test_roce_compute_fabric_sets_the_traffic_class(tmp_path: Path) -> None:
    text = (INVENTORIES / "lab-1su.yaml").read_text()
    start = text.index("  compute:\n")
    end = text.index("  storage:\n")
    roce = ("  compute:\n    type: roce\n    speed: 200G\n    switch: SN4700\n"
            "    topology: {kind: rail-optimized, scalable_unit: 8}\n"
            "    qos: {lossless: {dscp: 24, priority: 4}}\n")
    spec = tmp_path / "roce.yaml"
    spec.write_text(text[:start] + roce + text[end:])
    artifacts = {a.path: a.content for a in render_spec(compile_spec(spec))}
    env = _env(artifacts["hosts/hgx-8gpu-generic/nccl.env"])
    assert env["NCCL_IB_TC"] == str(24 << 2 | 2) == "98"
    assert int(env["NCCL_IB_TC"]) >> 2 == 24, "TC >> 2 is the lossless DSCP"
    assert env["NCCL_IB_ROCE_VERSION_NUM"] == "2" and env["NCCL_IB_ADDR_FAMILY"] == "AF_INET"
    assert "NCCL_IB_SL" not in env


def _lab_with_nccl(tmp_path: Path, section: str) -> Path:
    spec = tmp_path / "lab.yaml"
    spec.write_text((INVENTORIES / "lab-1su.yaml").read_text() + section)
    return spec


def test_nccl_options_reach_nccl_env_and_only_when_set(tmp_path: Path) -> None:
    spec = _lab_with_nccl(tmp_path, "nccl:\n  ib_timeout: 22\n  ib_retry_cnt: 5\n")
    artifacts = {a.path: a.content for a in render_spec(compile_spec(spec))}
    env = _env(artifacts["hosts/hgx-8gpu-generic/nccl.env"])
    assert env["NCCL_IB_TIMEOUT"] == "22" and env["NCCL_IB_RETRY_CNT"] == "5"
    assert "4.096 us * 2^value" in artifacts["hosts/hgx-8gpu-generic/nccl.env"].decode()
    plain = {a.path: a.content for a in render_spec(compile_spec(INVENTORIES / "lab-1su.yaml"))}
    unset = _env(plain["hosts/hgx-8gpu-generic/nccl.env"])
    assert "NCCL_IB_TIMEOUT" not in unset and "NCCL_IB_RETRY_CNT" not in unset, "unset keeps NCCL's default"


def test_nccl_option_bounds_are_accepted(tmp_path: Path) -> None:
    for timeout, retries in ((1, 0), (31, 7)):
        cluster = compile_spec(_lab_with_nccl(tmp_path, f"nccl: {{ib_timeout: {timeout}, ib_retry_cnt: {retries}}}\n"))
        assert [(o.env, o.value) for o in cluster.topology.cluster.nccl] == [
            ("NCCL_IB_TIMEOUT", timeout), ("NCCL_IB_RETRY_CNT", retries)]
