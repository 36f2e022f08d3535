"""Processes sharing sessions in one PostgreSQL: concurrent appends, and a worker killed mid-run.

Each worker is a real OS process with its own `PostgresSessionStore` (its own pool), as the
processes of a service behind a load balancer would be.
"""

from __future__ import annotations

from processes import BARRIER, PRELUDE, kill_after, run_processes

from fncore import Agent, PostgresSessionStore, Registry, Session
from fncore.testing import TestModel

TURNS = 20
"""Turns each of the two appending processes adds to the shared session."""

APPEND = (
    PRELUDE
    + BARRIER
    + """
from fncore import Agent, PostgresSessionStore, Registry
from fncore.errors import SessionConflict
from fncore.testing import FunctionModel

url, redis_url, turns, index = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
first = True


async def answer(request):
    # The answer names its prompt and how long the history it was given was.
    global first
    if first:  # both processes have loaded the new session: one of them must conflict
        first = False
        await barrier(redis_url, "loaded", 2)
    await asyncio.sleep(0.005)
    return f"{request.messages[-1].text} after {len(request.messages) - 1}"


async def run_turn(agent, prompt, session_id, attempts=5):
    # The retry of docs/concepts/sessions.md, as it stands there.
    for _ in range(attempts):
        outcome = await agent.run(prompt, session_id=session_id)
        if not isinstance(outcome.swap().value_or(None), SessionConflict):
            break
    return outcome


async def main():
    store = PostgresSessionStore(url)
    model = FunctionModel(answer)
    agent = Agent(model, registry=Registry(), sessions=store)
    for turn in range(turns):
        # Each conflict is a commit of the other process, which makes `turns` of them:
        # one attempt more than that always gets the turn in.
        outcome = await run_turn(agent, f"{index}.{turn}", "shared", attempts=turns + 1)
        outcome.unwrap()
    await store.aclose()
    print(json.dumps(len(model.requests) - turns))  # the attempts that conflicted


asyncio.run(main())
"""
)


async def test_two_processes_appending_to_one_session_lose_no_turn(
    postgres_url: str, redis_url: str
) -> None:
    """Two processes each add 20 turns to one session at once, retrying on `SessionConflict`.

    At least one attempt conflicts (both start from the new session), and in the end the
    session holds all 40 turns, each once: a prompt then its answer, each process's turns in
    its order, and every answer made from exactly the history it was committed after.
    """
    conflicts = await run_processes(APPEND, postgres_url, redis_url, str(TURNS))
    assert sum(conflicts) >= 1
    store = PostgresSessionStore(postgres_url)
    session = await store.load("shared")
    await store.aclose()
    assert session is not None
    assert session.version == 2 * TURNS
    assert len(session.messages) == 4 * TURNS
    prompts = session.messages[0::2]
    answers = session.messages[1::2]
    assert {m.role for m in prompts} == {"user"}
    assert {m.role for m in answers} == {"assistant"}
    for turn, (prompt, answer) in enumerate(zip(prompts, answers, strict=True)):
        assert answer.text == f"{prompt.text} after {2 * turn}"
    for index in ("0", "1"):
        mine = [m.text for m in prompts if m.text.startswith(f"{index}.")]
        assert mine == [f"{index}.{turn}" for turn in range(TURNS)]


KILLED = """
import asyncio, sys

from fncore import Agent, PostgresSessionStore, Registry
from fncore.testing import TestModel


async def slow_lookup(query: str) -> str:
    \"\"\"Look something up, slowly.\"\"\"
    print("in the tool", flush=True)
    await asyncio.Event().wait()  # until the process is killed
    return "never"


async def main():
    store = PostgresSessionStore(sys.argv[1])
    agent = Agent(TestModel(), registry=Registry(), tools=[slow_lookup], sessions=store)
    await agent.run("Look it up.", session_id=sys.argv[2])


asyncio.run(main())
"""

CONTINUED = (
    PRELUDE
    + """
from fncore import Agent, PostgresSessionStore, Registry
from fncore.testing import TestModel


async def main():
    store = PostgresSessionStore(sys.argv[1])
    model = TestModel()
    agent = Agent(model, registry=Registry(), sessions=store)
    output = (await agent.run("And now?", session_id=sys.argv[2])).unwrap().output
    await store.aclose()
    print(json.dumps([output, [m.text for m in model.requests[0].messages]]))


asyncio.run(main())
"""
)


def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


async def load(url: str, session_id: str) -> Session | None:
    """The session as a new store (a new process, say) loads it."""
    store = PostgresSessionStore(url)
    session = await store.load(session_id)
    await store.aclose()
    return session


async def test_a_worker_killed_mid_run_leaves_the_session_as_it_was(postgres_url: str) -> None:
    """SIGKILL a worker inside its tool, after the model's first round: nothing changed.

    The session is exactly as before that reply, and a run in another process continues it
    as if the killed one had never started.
    """
    store = PostgresSessionStore(postgres_url)
    agent = Agent(TestModel(), registry=Registry(), tools=[lookup], sessions=store)
    (await agent.run("Look up the time.", session_id="ada")).unwrap()
    await store.aclose()
    before = await load(postgres_url, "ada")
    assert before is not None
    assert (before.version, len(before.messages)) == (1, 4)

    assert kill_after(1, "-c", KILLED, postgres_url, "ada") == ["in the tool"]
    assert await load(postgres_url, "ada") == before

    ((output, seen),) = await run_processes(CONTINUED, postgres_url, "ada", count=1)
    assert seen == [m.text for m in before.messages] + ["And now?"]
    after = await load(postgres_url, "ada")
    assert after is not None
    assert after.version == before.version + 1
    assert after.messages[:4] == before.messages
    assert [(m.role, m.text) for m in after.messages[4:]] == [
        ("user", "And now?"),
        ("assistant", output),
    ]
