"""The tool's one state object (tigris_tool/state.py) is shared by every environment derived from
the one that loaded the tool: clones, override environments and the private environments target
and host code is built in. Two unrelated environments have two states (the documented rule)."""

from __future__ import annotations

import SCons.Environment

from tigris_tool.nodes import private_env
from tigris_tool.state import STATE, BuildState, state_of


def loaded(**settings) -> SCons.Environment.Base:
    """An environment as ``generate`` of a tigris tool leaves it (state set once, never replaced)."""
    env = SCons.Environment.Environment(tools=[], **settings)
    env.SetDefault(**{STATE: BuildState()})
    return env


def test_loading_a_second_tool_keeps_the_state():
    env = loaded()
    state = state_of(env)
    env.SetDefault(**{STATE: BuildState()})  # tigris_host after tigris
    assert state_of(env) is state


def test_derived_environments_share_one_state():
    env = loaded(CCFLAGS=["-m64"])
    state = state_of(env)
    clone = env.Clone(TIGRISBUILD_QUIET=True)
    assert state_of(clone) is state and state_of(clone.Clone()) is state
    assert state_of(env.Override({"TIGRISBUILD_BUDGET_MODE": "warn"})) is state
    private = private_env(env)
    assert state_of(private) is state and "-m64" not in private.subst("$CCFLAGS")  # the user's flags stay out
    state_of(private).printed_tables.add("b/m.check.ok")
    assert "b/m.check.ok" in state.printed_tables


def test_unrelated_environments_have_their_own_state():
    assert state_of(loaded()) is not state_of(loaded())
