"""The embedded model's seed per request: identical `local` members sent one prompt must not sample alike."""

from __future__ import annotations

from moot.agents.base import AgentRequest
from moot.agents.local import SEED_MODULUS, sampling_seed


def test_two_roles_of_one_local_model_get_different_seeds_and_each_keeps_its_own_across_runs() -> None:
    prompt = "Question: Share one cache?"
    alice, bob = (AgentRequest(prompt=prompt, role=role, protocol="council") for role in ("alice", "bob"))
    assert sampling_seed(0, alice) != sampling_seed(0, bob)
    assert sampling_seed(0, alice) == sampling_seed(0, AgentRequest(prompt="another turn", role="alice"))
    assert all(0 <= sampling_seed(base, alice) < SEED_MODULUS for base in (0, 7, SEED_MODULUS - 1))
    # A request that names its own seed keeps it; one without a role keeps the agent's.
    assert sampling_seed(0, alice.model_copy(update={"seed": 5})) == 5
    assert sampling_seed(3, AgentRequest(prompt=prompt)) == 3
