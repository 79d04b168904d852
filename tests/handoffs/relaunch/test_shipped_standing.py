"""The runbook's standing permission as shipped (issue 41): ON for the operator's own RL jobs the sweep
flagged on the runbook's clusters (a deep-dive KILL cancelled, a multi-node wedge relaunched, a
spurious chain link past max_steps cancelled), capped, braked by the circuit breaker; everything else
(a single-node or short silence, another cluster such as the lab's ``local``, a non-RL name, a
by-hand request) still gets the approval prompt."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cancel_fleet import NOW, silent_evidence, wedged_decision
from lab import LAB_CONFIG

from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest, asked, standing_acts
from sweep_core.handoffs.relaunch.brakes import apply_brakes
from sweep_core.handoffs.relaunch.plan import assess, decisions_view
from sweep_core.ledger.entries import Ledger

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = load_sweep_config(ROOT / "include" / "sweep.yaml").cancel
LAB = load_sweep_config(LAB_CONFIG).cancel  # lab-config/sweep.yaml over the shipped one (the demo, the lab)


def _kill(cluster: str, job_id: str, name: str) -> CancelDecision:
    """A deep-dive KILL's cancel hand-off, as the sweep's record backs it."""
    line = f"[deep_dive_kill] CRITICAL {cluster} RL {job_id} {name}: KILL verdict: reward exactly 0 on 10 steps"
    req = CancelRequest(cluster, job_id, name, "kill-approval", line, rule="deep_dive_kill", severity="critical")
    return CancelDecision(req, "cancel", state="RUNNING", elapsed="1:00:00", nodes="4", nodelist="gpu[1-4]",
                          by_hand=False)  # fmt: skip


def _overshoot(cluster: str, job_id: str, name: str) -> CancelDecision:
    line = f"[rl_resume_overshoot] WARN {cluster} RL {job_id} {name}: chain link past max_steps 1000 → cancel"
    req = CancelRequest(cluster, job_id, name, "cancel", line, rule="rl_resume_overshoot", severity="warn")
    return CancelDecision(req, "cancel", state="PENDING", nodelist="(Dependency)", by_hand=False)


def _single_node(d: CancelDecision) -> CancelDecision:
    return dataclasses.replace(d, nodes="1", nodelist="gpu1")


def _judge(decisions: list[CancelDecision], silent: int = 7800, running: int = 100) -> dict:
    evidence = {
        (d.request.cluster, d.request.job_id): silent_evidence(d.request.job_id, d.request.name, silent=silent)
        for d in decisions
        if d.state == "RUNNING"
    }
    ledger = Ledger()
    assess(decisions, evidence, decisions_view(ledger, decisions), SHIPPED, now=NOW, run_id="r1")
    clusters = {d.request.cluster for d in decisions}
    return apply_brakes(
        decisions,
        decisions_view(ledger, decisions),
        SHIPPED,
        running=dict.fromkeys(clusters, running),
        now=NOW,
        run_id="r1",
    )


def test_the_shipped_permission_covers_what_the_runbook_grants_on_its_clusters() -> None:
    kill = _kill("leonardo", "11", "rl__a2_qwen8b_grpo")
    wedge = wedged_decision("tacc", "12", "rl__a2_qwen8b_grpo_4n")  # 2 nodes, silent 130 min
    link = _overshoot("leonardo", "13", "rl__a2_cell5_resume2")
    _judge([kill, wedge, link])
    assert kill.offer["standing"].startswith("standing[0] cancel deep_dive_kill")
    assert wedge.offer["relaunch"] and wedge.offer["standing"].startswith("standing[1] relaunch liveness_stale")
    assert link.offer["standing"].startswith("standing[2] cancel rl_resume_overshoot")
    assert standing_acts([kill, wedge, link]) == [kill, wedge, link] and asked([kill, wedge, link]) == []


def test_anything_else_still_asks_a_human() -> None:
    lab = wedged_decision("local", "21", "rl__lab_wedge")  # the lab's cluster: no permission names it
    single = _single_node(wedged_decision("leonardo", "22", "rl__single"))  # one node: not the runbook's wedge
    sft = wedged_decision("leonardo", "23", "sft__qwen8b_8n")  # not an RL job
    hand = dataclasses.replace(_kill("leonardo", "24", "rl__by_hand"), by_hand=True)
    other = _kill("jupiter", "25", "rl__jupiter")  # a cluster the permission does not name
    decisions = [lab, single, sft, hand, other]
    _judge(decisions)
    assert [d.offer.get("standing") for d in decisions] == ["", "", "", "", ""]
    assert asked(decisions) == decisions  # each gets its approval prompt
    short = wedged_decision("leonardo", "26", "rl__short")
    _judge([short], silent=100 * 60)  # 100 min: under the permission's 2 h
    assert short.offer["standing"] == "" and asked([short]) == [short]
    assert LAB.standing == SHIPPED.standing  # the lab overlay keeps the shipped permissions, for leonardo/tacc/cw


def test_caps_and_the_circuit_breaker_hand_the_rest_to_a_human() -> None:
    kills = [_kill("leonardo", str(30 + i), f"rl__k{i}") for i in range(3)]
    _judge(kills)  # 3 KILLs among 100 RUNNING: under the breaker, over max_per_run 2
    assert [bool(d.offer["standing"]) for d in kills] == [True, True, False]
    assert "max_per_run 2 reached" in kills[2].offer["brake"] and asked(kills) == [kills[2]]
    wedges = [wedged_decision("tacc", str(40 + i), f"rl__w{i}") for i in range(3)]
    trips = _judge(wedges, running=4)  # 3 of 4 RUNNING silent at once: a filesystem, not 3 wedges
    assert "tacc" in trips and all(d.offer["standing"] == "" and "circuit breaker" in d.offer["brake"] for d in wedges)
    assert asked(wedges) == wedges
