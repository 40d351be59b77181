"""The protocol guide moot writes to ``.roundtable/GUIDE.md`` when it starts a meeting.

The English rendering of the Roundtable Protocol v2 seed (its Chinese original is the authority),
shipped as a string so that it needs no package data.
"""

GUIDE_TEXT = """\
# Roundtable Protocol v2

> A multi-agent discussion system built on file reads/writes and a JSON state machine.
> Any agent that reads this guide can join a discussion, or act as moderator and drive a meeting unattended.

## Layout

```
.roundtable/
├── GUIDE.md                ← this file (the protocol)
└── {meeting}/              ← one directory per meeting
    ├── AGENDA.md            # background, topic and role settings
    ├── turn.json            # the state machine (strict JSON)
    ├── 001_{role}.md        # read-only speech stream (increasing sequence number)
    ├── 002_{role}.md
    ├── ...
    └── MINUTES.md           # final minutes (written by the moderator)
```

## State machine (turn.json)

`turn.json` is the single mutable source of state:

```json
{
  "conference": "meeting name",
  "status": "open",               // open | concluding | closed
  "round": 1,                     // current round
  "max_rounds": 3,                // round limit
  "speaker_order": ["architect", "reviewer", "security"],
  "current_speaker_index": 0,     // index into speaker_order
  "current_speaker": "architect",
  "prompt_for_speaker": "Present your initial cache architecture design"
}
```

## What an agent does when invoked

### Step 1: locate and identify
1. Read `.roundtable/{meeting}/turn.json`.
2. Check `status`:
   - `closed`: reply "The meeting is over, see MINUTES.md" and stop.
   - `concluding`: if your role is **moderator**, do step 4 (summary); otherwise tell the user to wait for the moderator's summary.
3. Check that `current_speaker` is your assigned role. If not, reply `[meeting blocked] It is {current_speaker}'s turn to speak; dispatch that agent.` (If the system can spawn sub-agents, spawn the next role directly.)

### Step 2: pull context (incrementally)
To avoid context blow-up:
1. Must read: `AGENDA.md` (global background).
2. Must read: `prompt_for_speaker` in `turn.json` (what others expect of you).
3. Optional: the latest 2–3 speech files in the meeting directory; go further back only when needed.

### Step 3: speak and advance the state (atomic commit)
1. Write your speech to a new file `{3-digit sequence}_{your role}.md` (e.g. `003_reviewer.md`). Suggested sections: `## Position` (立场), `## Analysis` (分析论证), `## Responses / Questions` (回应/提问).
2. Compute the next state: `next_index = current_speaker_index + 1`; if `next_index >= len(speaker_order)` the round ends: `next_index = 0`, `round = round + 1`.
3. Terminal check: if `round > max_rounds`, or everyone has reached consensus, set `status` to `concluding` and `current_speaker` to `moderator`.
4. Overwrite `turn.json`: update `current_speaker_index` and `current_speaker`; in `prompt_for_speaker` write a short expectation or question for the next role (e.g. "I raised a performance concern; security, please assess this design's attack surface").

(Steps 1 and 4 must happen in the same execution flow.)

### Step 4: moderator summary (moderator only)
When `status` is `concluding` and the current role is `moderator` (usually the agent or user who started the meeting):
1. Read all `NNN_*.md` files.
2. Write `MINUTES.md` with: **discussion summary, final consensus, unresolved disagreements, action items**.
3. Set `status` in `turn.json` to `closed`.

## Unattended relay

Where the agent can call sub-agents (a Task/Agent tool), it need not wait for the user: after updating `turn.json`, if `status` is still `open`, the current agent spawns the next role with the prompt
`"Read .roundtable/GUIDE.md and join meeting {meeting} as {current_speaker}. Your instruction: {prompt_for_speaker}"`,
so that one command runs every round and delivers `MINUTES.md`.

## Starting a meeting
1. Create `.roundtable/{meeting}/`.
2. Write `AGENDA.md` (background and roles).
3. Write the initial `turn.json`.
4. Speak first, or trigger the first speaker.
"""
