"""gabp.gym over the demo game's herding task: Gymnasium's env checker, seeded resets, a few hundred random
steps, actions outside the space, vector environments, and games that are not there."""

from __future__ import annotations

import sys
from typing import Iterator

import pytest

gymnasium = pytest.importorskip("gymnasium")
np = pytest.importorskip("numpy")

import gabp  # noqa: E402
import gabp.gym  # noqa: E402
from conftest import TOKEN, DemoMod, gabp_bin  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402


@pytest.fixture
def env() -> Iterator[gabp.gym.GameEnv]:
    env = gabp.gym.GameEnv(command=[gabp_bin(), "mod"])
    yield env
    env.close()


def test_the_env_checker_passes(env: gabp.gym.GameEnv) -> None:
    check_env(env, skip_render_check=True)


def test_the_same_seed_starts_the_same_episode(env: gabp.gym.GameEnv) -> None:
    first, _ = env.reset(seed=42)
    for _ in range(5):
        env.step(env.action_space.sample())
    again, _ = env.reset(seed=42)
    np.testing.assert_array_equal(first, again)
    assert env.observation_space.contains(first)


def test_hundreds_of_random_steps_stay_in_the_spaces(env: gabp.gym.GameEnv) -> None:
    env.action_space.seed(7)
    observation, _ = env.reset(seed=7)
    episodes = 0
    total = 0.0
    for _ in range(400):
        observation, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(observation)
        assert isinstance(info, dict)
        total += float(reward)
        if terminated or truncated:
            episodes += 1
            observation, _ = env.reset()
    assert np.isfinite(total)


def test_an_action_outside_the_space_names_it(env: gabp.gym.GameEnv) -> None:
    env.reset(seed=1)
    with pytest.raises(gabp.InvalidParams) as raised:
        env.step(99)
    assert raised.value.field == "/params/action"


def test_a_step_before_reset_is_refused() -> None:
    env = gabp.gym.GameEnv(command=[gabp_bin(), "mod"])
    try:
        with pytest.raises(gabp.RemoteError) as raised:
            env.step(0)
        assert raised.value.code == -32401
        assert raised.value.data["reason"] == "reset_needed"
    finally:
        env.close()


def test_attaching_to_a_running_game(demo: DemoMod) -> None:
    env = gabp.gym.GameEnv(demo.endpoint, TOKEN)
    try:
        observation, info = env.reset(seed=3)
        assert env.observation_space.contains(observation)
    finally:
        env.close()
    assert demo.process.poll() is None, "closing an env that attached leaves the game running"


def test_a_mod_without_the_extension_is_not_supported() -> None:
    mod = gabp.Mod("no-env", "1.0")
    mod.add_tool("demo/echo", lambda value=None: {"value": value})
    endpoint = mod.serve("tcp://127.0.0.1:0", TOKEN)
    try:
        with pytest.raises(gabp.NotSupported, match="no-env does not offer the env extension"):
            gabp.gym.GameEnv(endpoint, TOKEN)
    finally:
        mod.stop()


def test_a_game_that_exits_at_once() -> None:
    with pytest.raises(gabp.Disconnected, match="exited with status 3"):
        gabp.gym.GameEnv(command=[sys.executable, "-c", "raise SystemExit(3)"])


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_vector_of_games(asynchronous: bool) -> None:
    envs = gabp.gym.make_vec(2, [gabp_bin(), "mod"], asynchronous=asynchronous)
    try:
        observations, _ = envs.reset(seed=1)
        assert envs.single_observation_space.contains(observations[0])
        for _ in range(20):
            observations, rewards, terminated, truncated, _ = envs.step(envs.action_space.sample())
        assert observations.shape[0] == 2 and rewards.shape == (2,)
    finally:
        envs.close()


def test_spaces_of_every_kind_convert() -> None:
    box = gabp.gym.space_from_json({"type": "Box", "low": [0, None], "high": 5, "shape": [2], "dtype": "int32"})
    assert box.contains(np.array([0, -7], dtype=np.int32))
    described = {
        "type": "Dict",
        "spaces": {
            "pos": {"type": "Box", "low": -1.5, "high": 1.5, "shape": [2, 2]},
            "mode": {"type": "Discrete", "n": 3, "start": 1},
            "keys": {"type": "MultiBinary", "n": 4},
            "dice": {"type": "MultiDiscrete", "nvec": [6, 6], "start": [1, 1]},
        },
    }
    space = gabp.gym.space_from_json(described)
    sample = space.sample()
    assert space.contains(sample)
    with pytest.raises(gabp.NotSupported, match="Tuple"):
        gabp.gym.space_from_json({"type": "Tuple"})
