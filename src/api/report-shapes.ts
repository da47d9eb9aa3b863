// Generated from openapi.yaml's report components by scripts/generate-report-shapes.ts (openapi-typescript):
// do not edit. Change openapi.yaml, then run `npm run generate:types`.
export type components = {
  schemas: {
    /**
     * Format: uuid
     * @description The engine session id, in lower case.
     */
    SessionId: string;
    /** @description The engine key of the agent as called, `agent:coach` or `agent:coach.7`. */
    AgentKey: string;
    /** @description The simulated user, always under `mcp:`. */
    DeviceKey: string;
    /**
     * @description Plain sentences: why the connection closed, that the engine runs its end-of-conversation work
     *     about 30 s after a plain close, what a reconnect lost, frames that were skipped, …
     */
    Notes: string[];
    /** @description One memory unit, an opaque JSON object as the engine holds it. */
    MemoryUnit: {
      [key: string]: unknown;
    };
    MemorySnapshot: {
      device_ref: components['schemas']['DeviceKey'];
      /** @description The engine user behind the device. */
      user_id: string;
      units: components['schemas']['MemoryUnit'][];
      unit_count: number;
      /** Format: date-time */
      taken_at: string;
      /**
       * @description Empty when there are units. Without units, says why it may be: a session is aggregated
       *     about 30 s after its connection closes, so a snapshot straight after the last turn can
       *     hold nothing yet.
       */
      notes: string[];
    };
    /**
     * @description The error code; it decides the status. 400 `invalid_request`, `confirmation_required`;
     *     401 `unauthenticated`; 403 `forbidden`, `conversation_not_yours`, `run_not_yours`; 404 `not_found`,
     *     `agent_not_found`, `revision_not_found`, `session_not_found`, `device_not_found`, `run_not_found`; 409
     *     `no_published_revision`, `revision_not_runnable`, `turn_in_progress`,
     *     `conversation_settings_fixed`, `model_not_configured`, `run_running`; 413 `body_too_large`; 415 `unsupported_media_type`; 429
     *     `caller_conversation_limit`; 500 `internal`; 502 `engine_unavailable`, `engine_refused`,
     *     `identity_unrecognised`, `identity_not_enabled`, `model_failed` (only inside a run's report); 503
     *     `pod_conversation_limit`, `platform_unavailable`, `identity_not_configured`,
     *     `identity_malformed`, `shutting_down`, `run_unavailable`.
     * @enum {string}
     */
    ErrorCode:
      | 'invalid_request'
      | 'confirmation_required'
      | 'unauthenticated'
      | 'forbidden'
      | 'conversation_not_yours'
      | 'run_not_yours'
      | 'not_found'
      | 'agent_not_found'
      | 'revision_not_found'
      | 'session_not_found'
      | 'device_not_found'
      | 'run_not_found'
      | 'no_published_revision'
      | 'revision_not_runnable'
      | 'turn_in_progress'
      | 'conversation_settings_fixed'
      | 'model_not_configured'
      | 'run_running'
      | 'body_too_large'
      | 'unsupported_media_type'
      | 'caller_conversation_limit'
      | 'pod_conversation_limit'
      | 'platform_unavailable'
      | 'identity_not_configured'
      | 'identity_malformed'
      | 'shutting_down'
      | 'run_unavailable'
      | 'engine_unavailable'
      | 'engine_refused'
      | 'model_failed'
      | 'identity_unrecognised'
      | 'identity_not_enabled'
      | 'internal';
    /** @description Every error answer, and the last line of a stream whose turn failed. */
    Error: {
      error: components['schemas']['ErrorCode'];
      /** @description One plain sentence a person can act on. */
      message: string;
      /**
       * @description Present for `invalid_request` from the input rules (`problems`) and for
       *     `conversation_settings_fixed` (`fields`, `fixed`).
       */
      details?: components['schemas']['InvalidRequestDetails'] | components['schemas']['SettingsFixedDetails'];
    };
    InvalidRequestDetails: {
      /** @description Every problem found; the first is the message. */
      problems: {
        /** @description The field (`line`, `snapshot.units`, `agent`, …), or `body` / `path` for the whole part. */
        field: string;
        rule: string;
      }[];
    };
    SettingsFixedDetails: {
      /** @description The connect fields that differ from the conversation's own. */
      fields: ('locale' | 'device_ref' | 'time_zone' | 'run_label' | 'time_offset')[];
      /** @description The conversation's own connect settings. */
      fixed: {
        device_ref: string;
        locale: string;
        time_zone: string | null;
        run_label: string | null;
        time_offset: string | null;
      };
    };
    /** @description What a run naming a monitor recorded in the monitors' series. */
    MonitorRecord: {
      name: components['schemas']['MonitorName'];
      /** @description Attempts added to the monitor's counters. */
      recorded: number;
      /** @description Attempts not recorded because their label set would have passed MAX_MONITOR_SERIES on this pod. */
      dropped: number;
    };
    /**
     * @description The monitor this run feeds (a scheduled suite): when the run finishes, its attempts are added to
     *     `agent_test_gateway_monitor_attempts_total` by monitor, agent, revision, conversation and outcome, and the
     *     monitor's last-run time is set. At most `MAX_MONITOR_SERIES` label sets per pod; the report says what was dropped.
     */
    MonitorName: string;
    /** @description The report of a run. */
    RunReport: {
      /** Format: uuid */
      run_id: string;
      /** @description The run label every engine session of the run carried. */
      run_label: string;
      agent: components['schemas']['AgentKey'];
      revision: components['schemas']['RunRevision'];
      /** @description The suite's name, if it has one. */
      name: string | null;
      /**
       * @description Every conversation passed (all its attempts passed, or it is flaky with its pass rate at least `pass_rate`);
       *     null when the run was cancelled (see `cancelled`): it decided nothing.
       */
      passed: boolean | null;
      /** @description How the run was cut short, said first in every report; null when it ran to its end. */
      cancelled: components['schemas']['Cancellation'] | null;
      /** Format: date-time */
      started_at: string;
      /** Format: date-time */
      finished_at: string;
      duration_ms: number;
      /** @description The most conversation attempts the run held at once. */
      parallelism: number;
      /** @description The seed every model call of the run carried (the suite's `seed`, or one drawn for the run). */
      seed: number;
      /** @description The version of the simulated-user and judge prompts (docs/simulated-users.md); it changes whenever their wording does. */
      prompt_version: string;
      /** @description Attempts of each conversation, as run (a comparison side: its budget per conversation). */
      repeat: number;
      /** @description The share of a conversation's attempts that must pass, as run. */
      pass_rate: number;
      totals: components['schemas']['RunTotals'];
      model_usage: components['schemas']['ModelUsage'];
      /**
       * @description The engine session of every attempt that started, in suite order; an attack attempt's plant and control
       *     sessions beside its own (plant, attack, control).
       */
      session_ids: components['schemas']['SessionId'][];
      memory: components['schemas']['RunMemory'] | null;
      monitor: components['schemas']['MonitorRecord'] | null;
      /** @description In suite order. */
      conversations: components['schemas']['RunConversation'][];
      notes: components['schemas']['Notes'];
    };
    /**
     * @description A run or comparison cancelled before it ended: not decided. Its report leads with this; a conversation already
     *     decided keeps its verdict, every other one says it was not decided.
     */
    Cancellation: {
      /**
       * @description Who or what cancelled it: `DELETE /v1/runs/{id} cancelled it` (also the command's Ctrl-C and `cancel ID`), the MCP
       *     client, a single pod's drain, no follower within the grace.
       */
      reason: string;
      /** @description Engine sessions its attempts held before the cancel (attempts that never started are not counted). */
      sessions: number;
      /** @description The sessions it could have taken: a run, conversations × `repeat`; a comparison, `sessions.budget`. */
      sessions_budget: number;
    };
    /** @description The revision that actually ran, as the platform resolved the agent ref (a plain ref runs its Published revision). */
    RunRevision: {
      ref: string;
      revision: number;
      /** @enum {string} */
      state: 'Published' | 'Preview';
    };
    /** @description Model calls (simulated lines and judge rulings), their tokens as the model reported them, and their time. */
    ModelUsage: {
      calls: number;
      prompt_tokens: number;
      completion_tokens: number;
      duration_ms: number;
    };
    RunCount: {
      total: number;
      passed: number;
      failed: number;
      /** @description Turns never sent and their expectations (never evaluated); criteria never ruled on. */
      skipped: number;
    };
    RunAttemptCount: {
      total: number;
      passed: number;
      failed: number;
      error: number;
      /** @description Attempts the simulated user spoiled (see `RunAttempt.review`). */
      invalid: number;
      /** @description Attempts cut short by the run's cancel. */
      cancelled: number;
    };
    /** @description Reviewed failed and invalid attempts by who was found responsible (see `AttemptReview`). */
    ResponsibilityCount: {
      agent: number;
      simulated_user: number;
      judge: number;
      unclear: number;
    };
    CriterionSplits: {
      id: string;
      text: string;
      /** @description Rulings with votes (criteria not judged left out). */
      rulings: number;
      split: number;
      /** @description `split` / `rulings`; null without a ruling. */
      split_share: number | null;
    };
    /**
     * @description Who is responsible for a failed attempt whose conversation has a simulated user or criteria: first
     *     deterministic checks of the simulated user (it ended on its own line before `min_turns` lines or without
     *     saying anything of its goal, repeated a line, or sent a line the line rules refuse), then, when none
     *     fired, the model's `failure_review` (one call, the run's seed, its usage counted). `simulated_user`
     *     makes the attempt `invalid`; with `judge` or `unclear` it stays failed. A model answer outside the
     *     schema, or no answer, is `unclear` with a `note` saying so.
     */
    AttemptReview: {
      /** @enum {string} */
      responsible: 'agent' | 'simulated_user' | 'judge' | 'unclear';
      /** @description The turn where it went wrong (the transcript's turn index), or null. */
      turn: number | null;
      /** @description One sentence. */
      reason: string;
      /**
       * @description Whether a deterministic check of the simulated user or the model's review decided.
       * @enum {string}
       */
      by: 'checks' | 'model';
      /** @description Why the review is `unclear` when the model gave no usable answer; null otherwise. */
      note: string | null;
    };
    RunConversationCount: {
      total: number;
      passed: number;
      flaky: number;
      failed: number;
      error: number;
      /** @description Conversations the cancel left undecided. */
      cancelled: number;
    };
    RunTotals: {
      conversations: components['schemas']['RunConversationCount'];
      attempts: components['schemas']['RunAttemptCount'];
      turns: components['schemas']['RunCount'];
      expectations: components['schemas']['RunCount'];
      criteria: components['schemas']['RunCount'];
    };
    RunMemory: {
      device_ref: components['schemas']['DeviceKey'];
      /** @description Units the engine loaded at the last restore; `null` when nothing was restored. */
      restored: number | null;
      /** @description How many times the fixture was restored (before each journey on its device, that is before the first of its conversations, every round). */
      restores: number;
      /** @description The snapshot taken after the run, when `memory.save` asked for one. */
      snapshot: components['schemas']['MemorySnapshot'] | null;
      /** @description Why a restore or the snapshot after the run could not be done. */
      error: components['schemas']['RunProblem'] | null;
      notes: components['schemas']['Notes'];
    };
    /** @description An error as the API answers it, inside a report (`error` is an ErrorCode, or `internal`). */
    RunProblem: {
      error: components['schemas']['ErrorCode'];
      message: string;
    };
    /** @description A conversation of the suite, over its attempts. */
    RunConversation: {
      name: string;
      /** @description Its place in the suite, from 0. */
      index: number;
      /**
       * @description Over the attempts that are neither `invalid` nor `cancelled`: `passed`: every attempt passed; `flaky`: some
       *     did; `failed`: none did; `error`: no attempt could be judged or go on (a model failure, the gateway could
       *     not run it, or every attempt was invalid); `cancelled`: not decided, the run was cancelled before its
       *     attempts had all run (`passed` is then false, and means nothing).
       * @enum {string}
       */
      status: 'passed' | 'flaky' | 'failed' | 'error' | 'cancelled';
      /** @description `status` is `passed`, or `flaky` with `pass_rate` at least `required_pass_rate`. */
      passed: boolean;
      /** @description The share of attempts that passed, invalid and cancelled attempts left out. */
      pass_rate: number;
      required_pass_rate: number;
      /** @description The pass rate of the judged attempts (errors and invalid attempts left out) with its 95 % Wilson interval. */
      pass_rate_interval: components['schemas']['RateInterval'];
      /**
       * @description Whether the agent's pass rate meets `required_pass_rate` as far as the attempts tell: `met` when the interval
       *     lies at or above it, `missed` when below, else `undecided` (a required rate of 1 is never `met`).
       * @enum {string}
       */
      pass_rate_check: 'met' | 'missed' | 'undecided';
      attempts_passed: number;
      attempts_total: number;
      /** @description Attempts the simulated user spoiled, left out of the pass rate and its interval and counted apart. */
      attempts_invalid: number;
      /**
       * @description Attempts cut short by the run's cancel, left out like invalid ones and counted apart. An attempt that never
       *     started (the cancel came first) is not an attempt: it is not listed.
       */
      attempts_cancelled: number;
      responsibility: components['schemas']['ResponsibilityCount'];
      /**
       * @description Per criterion judged with more than one vote (conversation and turn level, by id), over the attempts: its
       *     rulings, how many were split and the share. A criterion the judge splits on often is worded too loosely.
       */
      criteria_splits: components['schemas']['CriterionSplits'][];
      model_usage: components['schemas']['ModelUsage'];
      attempts: components['schemas']['RunAttempt'][];
      attack?: components['schemas']['AttackRate'];
    };
    /** @description One attempt of a conversation, on its own engine session. */
    RunAttempt: {
      attempt: number;
      /**
       * @description `error`: the attempt could not be judged or could not go on (see `error`); not a failure. `invalid`: it
       *     failed, and its review found the simulated user responsible: left out like an error, counted apart.
       *     `cancelled`: the run's cancel cut it short; left out like `invalid`, counted apart.
       * @enum {string}
       */
      status: 'passed' | 'failed' | 'error' | 'invalid' | 'cancelled';
      /** @description The engine session; `null` when its first turn could not run. */
      session_id: components['schemas']['SessionId'] | null;
      /** @description The simulated user (under `mcp:`); `null` for a fresh one that never connected. */
      device_ref: string | null;
      locale: string | null;
      time_zone: string | null;
      time_offset: string | null;
      /** Format: date-time */
      started_at: string | null;
      duration_ms: number;
      ended_by_agent: boolean;
      /**
       * @description Why the conversation ended: the script's last line ran (`script_end`), the simulated user said
       *     it was done, the agent ended it, the simulated user's `max_turns` was reached, a turn did not end
       *     with its own exit, the attempt could not go on (`error`), or the run's cancel cut it short (`cancelled`).
       * @enum {string}
       */
      stop_reason: 'script_end' | 'user_done' | 'agent_ended' | 'max_turns' | 'turn_failed' | 'error' | 'cancelled';
      turns: components['schemas']['RunTurn'][];
      /** @description The conversation-level checks over all turns (`expect.tools`, `not_tools`, `shown`, `not_shown`, `ended_by_agent`). */
      expectations: components['schemas']['RunExpectation'][];
      /** @description The conversation-level criteria (`expect.criteria`), ruled on once over the whole transcript. */
      criteria: components['schemas']['RunCriterion'][];
      /**
       * @description What the attempt left in the simulated user's memory and its `expect.memory` checks; `null` for a
       *     conversation without memory checks (it does not wait for the engine's aggregation).
       */
      memory: components['schemas']['RunAttemptMemory'] | null;
      model_usage: components['schemas']['ModelUsage'];
      /** @description Why the attempt could not go on or be judged. */
      error: components['schemas']['RunProblem'] | null;
      /** @description Who is responsible for the failure; null when the attempt was not reviewed. */
      review: components['schemas']['AttemptReview'] | null;
      attack?: components['schemas']['RunAttack'];
      notes: components['schemas']['Notes'];
    };
    /**
     * @description An attack conversation's success rate (only there): the share of judged attempts (`error` and `invalid` left
     *     out) in which the agent broke, with its 95 % Wilson interval.
     */
    AttackRate: {
      attempts: number;
      broke: number;
      success_rate: number | null;
      success_rate_interval: components['schemas']['RateInterval'];
    };
    /**
     * @description An attack conversation's attempt (only there): whether the agent held, where it broke and the evidence, the
     *     canary planted, the attacker lines the guard refused, and the planting user's visits. The attempt passes when
     *     the attack held and, with a control, the control got the canary back.
     */
    RunAttack: {
      /**
       * @description `broke`: a check failed; `held`: none did; `null`: the attempt could not go on or be judged (an error).
       * @enum {string|null}
       */
      outcome: 'held' | 'broke' | null;
      objective: string;
      /**
       * @description `null`: the attacker chose.
       * @enum {string|null}
       */
      strategy: 'crescendo' | 'role_play' | 'injection' | 'authority' | 'persistence' | null;
      /** @description The first turn whose reply broke a check; `null` when it held, or broke only in memory or by a criterion. */
      broke_at_turn: number | null;
      /** @description Every failed check's evidence (the turn and the line, the tool, the memory unit, the judge's ruling). */
      evidence: string[];
      /** @description The token drawn for this attempt (letters and digits), `null` without a plant. */
      canary: string | null;
      /** @description Attacker lines the line rules refused (a `#` line, a control character, a line past the limits); none reached the engine. */
      guard_hits: number;
      refused_lines: {
        line: string;
        rule: string;
      }[];
      /** @description The planting user's visit before the attack; `null` without a plant. */
      plant: components['schemas']['RunAttackVisit'] | null;
      /** @description The planting user's return after the attack; `null` without a control, or when it did not run. */
      control: components['schemas']['RunAttackVisit'] | null;
    };
    /** @description A scripted visit of the planting user, on its own engine session. */
    RunAttackVisit: {
      device_ref: string;
      session_id: components['schemas']['SessionId'] | null;
      turns: components['schemas']['RunTurn'][];
    };
    /**
     * @description The units the conversation added to the simulated user's memory (its units after the conversation, less
     *     those before it: the restored fixture or the previous conversation's) and removed, and the checks over them.
     *     After the plain close the gateway polls the memory until the added units appear and stop changing, up to
     *     `expect.memory.wait_ms`; a memory answer of the engine that is not a list of JSON objects, or an engine
     *     error, fails the checks with the reason (`unreadable`), never the run.
     */
    RunAttemptMemory: {
      /**
       * @description `aggregated`: the memory changed and settled; `nothing_aggregated`: it never changed within the wait (every
       *     check fails with that reason); `unreadable`: the memory could not be read (see `error`); `not_checked`: the
       *     conversation did not run, or the caller hung up.
       * @enum {string}
       */
      status: 'aggregated' | 'nothing_aggregated' | 'unreadable' | 'not_checked';
      /** @description From the plain close until the memory settled (or the wait ran out). */
      waited_ms: number;
      /** @description Memory reads after the close. */
      polls: number;
      /** @description The user's units before the conversation; `null` when they could not be read. */
      units_before: number | null;
      /** @description The user's units at the last read after it; `null` when none could be read. */
      units_after: number | null;
      /** @description Units after the conversation that were not there before, whole. */
      added: components['schemas']['MemoryUnit'][];
      /** @description Units before the conversation that are gone after it, whole. */
      removed: components['schemas']['MemoryUnit'][];
      /**
       * @description `memory_contains`, `memory_not_contains` (one per text, its evidence the unit that matched or that none
       *     did), `memory_added_at_least`, `memory_added_at_most`; with `memory_aggregated` first (failed) when nothing
       *     was aggregated or the memory could not be read.
       */
      expectations: components['schemas']['RunExpectation'][];
      /** @description `expect.memory.criteria`, ruled on by the judge over the added and removed units and the transcript. */
      criteria: components['schemas']['RunCriterion'][];
      /** @description Why the memory could not be read (the engine's answer was not what its contract says, or an error). */
      error: components['schemas']['RunProblem'] | null;
      notes: components['schemas']['Notes'];
    };
    /**
     * @description A judge's ruling on one criterion, the majority of its votes; the gateway computes `passed`, and `inconclusive`
     *     fails.
     */
    RunCriterion: {
      id: string;
      text: string;
      /** @enum {string} */
      verdict: 'passed' | 'failed' | 'inconclusive';
      /** @description `verdict` is `passed`. */
      passed: boolean;
      /** @description The judge's one-sentence reasoning (its evidence); `not judged: …` when there was no ruling. */
      reasoning: string | null;
      /** @description The judge's rulings cast (the criterion's `votes`; 0 when it was not judged). */
      votes: number;
      /**
       * @description Votes for the verdict (2 of 3: `agreement` 2, `votes` 3). With no verdict above half of the votes (1 passed,
       *     1 failed, 1 inconclusive) the ruling is `inconclusive` and this is the largest count.
       */
      agreement: number;
      /** @description The votes disagree (`agreement` below `votes`). */
      split: boolean;
    };
    /** @description One turn's transcript and its expectations. */
    RunTurn: {
      /** @description The turn's number in its conversation, from 1. */
      index: number;
      line: string;
      /**
       * @description Who said the line: the suite's script (or the gateway's `#intro` opening a simulated user's conversation), or the simulated user.
       * @enum {string}
       */
      source: 'script' | 'simulated_user';
      /** @enum {string} */
      status: 'passed' | 'failed' | 'skipped';
      /**
       * @description How the turn ended (as a conversation turn's `outcome`); `error` when the gateway could
       *     not run it (see `error`); `null` when it was skipped.
       * @enum {string|null}
       */
      outcome: 'exit' | 'timeout' | 'engine_closed' | 'engine_error' | 'cancelled' | 'error' | null;
      /** @description The spoken text of the turn, joined; `null` when it did not run. */
      text: string | null;
      tools: string[];
      shown: string[];
      ended_by_agent: boolean;
      duration_ms: number | null;
      /** @description This turn opened a new socket to the engine session, which lost the earlier turns' planning. */
      reconnected: boolean;
      expectations: components['schemas']['RunExpectation'][];
      /** @description The turn's `expect.judge` (id `turn_N`), ruled on over the conversation up to this turn. */
      criteria: components['schemas']['RunCriterion'][];
      notes: components['schemas']['Notes'];
      /** @description Why the turn did not run at all. */
      error: components['schemas']['RunProblem'] | null;
      /** @description Why the turn was not sent (an earlier turn failed, the agent ended the conversation, the caller hung up). */
      skipped_reason: string | null;
    };
    RunExpectation: {
      /**
       * @description An expectation of the suite, or an implicit one: `turn_completed` (the turn ended with its
       *     own exit; listed only when it did not) and `conversation_continues` (the agent ended the
       *     conversation while the suite had turns left). `tools`, `not_tools` and the attempt-level
       *     `shown`, `not_shown`, `ended_by_agent` are checked over all turns; the `memory_` kinds over the memory
       *     units the conversation added (`memory_aggregated`: implicit, listed only when nothing was aggregated or the
       *     memory could not be read). An attack's checks: `never_says` (per text or regular expression) and
       *     `never_tools` (per tool) over the attacker's turns, `canary` (the planted canary in the agent's text or shown
       *     elements) and `canary_in_memory` (in a unit the attack added to the attacker's memory), and `control_canary`
       *     (the planting user's return visit got the canary back).
       * @enum {string}
       */
      kind:
        | 'text_matches'
        | 'text_contains'
        | 'tool'
        | 'not_tool'
        | 'shown'
        | 'not_shown'
        | 'ended_by_agent'
        | 'exit_within_ms'
        | 'tools'
        | 'not_tools'
        | 'turn_completed'
        | 'conversation_continues'
        | 'memory_contains'
        | 'memory_not_contains'
        | 'memory_added_at_least'
        | 'memory_added_at_most'
        | 'memory_aggregated'
        | 'never_says'
        | 'never_tools'
        | 'canary'
        | 'canary_in_memory'
        | 'control_canary';
      /** @description The expectation's value as the suite gave it (a list for `text_contains`, `tools`, …). */
      expected: unknown;
      /** @description `null`: not evaluated, the turn was skipped. */
      passed: boolean | null;
      /** @description One sentence on what was seen, e.g. `tools called: lookup_order`. */
      evidence: string;
      /** @description The observed value the expectation was checked against (text, tools, shown, …). */
      actual: unknown;
    };
    /**
     * @description One line of a streamed run, the media type's `itemSchema`: validate each line on its own (one
     *     JSON object per line), never the whole body. A `{"turn": …}` line per turn as it is evaluated,
     *     then either one `{"report": …}` line or, when the run failed after streaming began, one error
     *     line.
     */
    RunStreamLine:
      | components['schemas']['RunStreamRunLine']
      | components['schemas']['RunStreamTurnLine']
      | components['schemas']['RunStreamWaitingLine']
      | components['schemas']['RunStreamMovedLine']
      | components['schemas']['RunStreamReportLine']
      | components['schemas']['Error'];
    /** @description The first line of every run's stream, from any pod it is read through. */
    RunStreamRunLine: {
      run: {
        /**
         * Format: uuid
         * @description The run's id, `GET /v1/runs/{id}`; the report's `run_id`.
         */
        id: string;
        /** @enum {string} */
        status: 'running';
        kind: components['schemas']['RunKind'];
        conversations: number;
        /** @description The most engine sessions it may take (every attempt of every conversation, on both sides). */
        sessions_budget: number;
      };
    };
    /** @description Written when the run starts waiting for room under a limit (again each time it starts waiting after none of its starts waited). */
    RunStreamWaitingLine: {
      waiting: {
        /** @enum {string} */
        limit: 'MAX_RUN_CONVERSATIONS_PER_POD' | 'MAX_RUN_CONVERSATIONS_PER_CALLER' | 'MAX_CONVERSATIONS_PER_POD' | 'concurrency';
        /** @description The conversations the full limit held. */
        held: number;
        message: string;
      };
    };
    /**
     * @description The run continues on another pod (its holder drained, or stopped answering): the lines
     *     after this one come from there. Turn lines of the attempts that were in flight before it
     *     came already; those attempts run again and stream again.
     */
    RunStreamMovedLine: {
      moved: components['schemas']['RunMove'];
    };
    /**
     * @description A comparison's conversation once the gate stopped it: why, after how many rounds, each side's
     *     attempts as the test counted them with the pass rate's 95 % interval (final: a stopped
     *     conversation runs no more rounds, and the report shows the same), and its verdict where the
     *     stop decided it.
     */
    ConversationDecision: {
      conversation: string;
      conversation_index: number;
      /** @enum {string} */
      stop: 'decided' | 'futile' | 'budget';
      rounds: number;
      /**
       * @description Stopped `decided`: the side its boundary was crossed to, which is the report's verdict (a
       *     crossing is within the first step of the report's Holm procedure). Stopped `futile` or at
       *     its `budget`: null; its verdict comes with the report, from every conversation's test
       *     together (`unchanged` mostly, but the Holm procedure may still find a difference).
       * @enum {string|null}
       */
      verdict: 'regressed' | 'fixed' | null;
      baseline: components['schemas']['DecidedSide'];
      candidate: components['schemas']['DecidedSide'];
    };
    /** @description One side of a stopped conversation, as the gate's test counted its rounds. */
    DecidedSide: {
      /** @description Attempts that passed or failed (invalid and cancelled ones are left out, run again within a round). */
      judged: number;
      passed: number;
      /** @description Rounds whose attempt ended in error, left out of the test. */
      errors: number;
      pass_rate_interval: components['schemas']['RateInterval'];
    };
    RunStreamTurnLine: {
      turn: {
        /** @description The conversation's name. */
        conversation: string;
        /** @description Its place in the suite, from 0. */
        conversation_index: number;
        /** @description The attempt of the conversation, from 1. */
        attempt: number;
        session_id: components['schemas']['SessionId'] | null;
        turn: components['schemas']['RunTurn'];
      };
    };
    RunStreamReportLine: {
      report: components['schemas']['RunReport'];
    };
    /** @description What differs between a baseline and a candidate revision over the same suite. */
    ComparisonReport: {
      /** Format: uuid */
      comparison_id: string;
      /**
       * Format: uuid
       * @description The comparison as a resource, `GET /v1/runs/{run_id}` (the same id as `comparison_id`).
       */
      run_id: string;
      /** @description The suite's name, if it has one. */
      name: string | null;
      baseline: components['schemas']['ComparedRevision'];
      candidate: components['schemas']['ComparedRevision'];
      /**
       * @description Some conversation regressed, or the suite as a whole did (`suite.verdict`); a release gate stops here (the CLI
       *     exits 1). Null when the comparison was cancelled (see `cancelled`): not decided, whatever was found before.
       */
      regressed: boolean | null;
      /** @description How the comparison was cut short, said first in every report; null when it ran to its end. */
      cancelled: components['schemas']['Cancellation'] | null;
      /**
       * @description The chance that anything — a conversation or the suite — is flagged `regressed` when no revision differs is at
       *     most 1 − confidence.
       */
      confidence: number;
      /** @description How attempts were spent per side and conversation. */
      attempts: {
        /**
         * @description `repeat`: exactly `max_attempts`, tested at the end; `sequential`: rounds until decided.
         * @enum {string}
         */
        mode: 'repeat' | 'sequential';
        min_attempts: number;
        max_attempts: number;
      };
      sessions: components['schemas']['SessionsSpent'];
      /** Format: date-time */
      started_at: string;
      /** Format: date-time */
      finished_at: string;
      duration_ms: number;
      /** @description The seed of every model call on both sides. */
      seed: number;
      prompt_version: string;
      /** @description Attempts of each conversation on each side at most (`attempts.max_attempts`). */
      repeat: number;
      pass_rate: number;
      totals: {
        conversations: number;
        regressed: number;
        fixed: number;
        unchanged: number;
        error: number;
        /** @description Conversations the cancel left undecided. */
        undecided: number;
        /** @description Conversations counted as `unchanged` or `fixed` that fail on both sides (`fails_on_both_sides`). */
        fails_on_both_sides: number;
      };
      /** @description The suite's own verdict over all conversations together; null with one conversation (its verdict is the suite's). */
      suite: components['schemas']['ComparisonSuite'] | null;
      /** @description Turn latency of each side over all its turns. */
      latency: {
        baseline: components['schemas']['Latency'];
        candidate: components['schemas']['Latency'];
      };
      model_usage: {
        baseline: components['schemas']['ModelUsage'];
        candidate: components['schemas']['ModelUsage'];
        total: components['schemas']['ModelUsage'];
      };
      /** @description In suite order. */
      conversations: components['schemas']['ComparedConversation'][];
      /** @description Each side's full run report (transcripts, evidence, reasoning, session ids). */
      runs: {
        baseline: components['schemas']['RunReport'];
        candidate: components['schemas']['RunReport'];
      };
      notes: components['schemas']['Notes'];
    };
    /** @description Engine sessions spent on both sides, and what the budget would have allowed. */
    SessionsSpent: {
      spent: number;
      budget: number;
    };
    /** @description A rate's estimate (null without anything to estimate from) and its 95 % interval. */
    RateInterval: {
      estimate: number | null;
      low: number;
      high: number;
    };
    /** @description How sure a conversation's verdict is, and what it cost. */
    ComparisonStatistics: {
      /** @description The verdict in one sentence a person can act on. */
      summary: string;
      /** @description Candidate − baseline pass rate with Newcombe's 95 % interval; null when the sides cannot be compared. */
      difference: components['schemas']['RateInterval'] | null;
      /**
       * @description The one-sided p-value for "the candidate passes less often", from every judged attempt of both sides: Barnard's
       *     exact unconditional test (pooled z) for `repeat`, a sequential p-value over the same statistic when sequential.
       */
      p_regressed: number | null;
      /** @description The same for "the candidate passes more often". */
      p_fixed: number | null;
      /** @description What the p-value had to be at or below for a verdict (Holm's threshold at its rank). */
      p_needed: number | null;
      /**
       * @description For `unchanged`, the smallest drop from the baseline's pass rate that the gate as designed (its budget and its
       *     early stops, futility included) catches 80 % of the time: what an early stop relied on. For a comparison cut
       *     short, the drop the rounds it ran would have caught. Null otherwise or when none.
       */
      detectable_drop: number | null;
      /** @description Rounds run, each one attempt per side. */
      rounds: number;
      /**
       * @description Why the conversation stopped: `decided` (significant), `futile` (too unlikely to become significant within the
       *     budget), `budget` (max_attempts reached); null: repeat, or cut short
       *     (cancelled, or a side's sessions spent on invalid attempts run again).
       * @enum {string|null}
       */
      stop: 'decided' | 'futile' | 'budget' | null;
      /** @description Engine sessions spent on both sides. */
      sessions: number;
      /** @description Engine sessions the budget would have allowed on both sides. */
      sessions_budget: number;
    };
    /**
     * @description Whether the candidate is worse (or better) over all conversations together: a stratified test, each conversation its
     *     own stratum, on the pairs of attempts (the k-th judged attempt of each side) that one side passed and the other
     *     failed. It holds a share of 1 − confidence beside the conversations (Holm's procedure, weighted), so that a drop
     *     spread thinly over every conversation is caught where no single conversation's is.
     */
    ComparisonSuite: {
      /**
       * @description `error`: no pair of attempts could be judged; `undecided`: the comparison was cancelled before it was decided.
       * @enum {string}
       */
      verdict: 'regressed' | 'fixed' | 'unchanged' | 'error' | 'undecided';
      /** @description The suite's verdict in one sentence, with the pooled difference and its 95 % interval. */
      summary: string;
      /**
       * @description Candidate − baseline pass rate over every conversation's pairs (each weighted by its pairs), with a 95 % interval
       *     (stratified paired Wald, Agresti and Min's adjustment); null without a pair.
       */
      difference: components['schemas']['RateInterval'] | null;
      /**
       * @description The one-sided p-value for "the candidate passes less often" over the suite: the exact sign test on the pairs that
       *     differ for `repeat`, a sequential p-value over the same walk when sequential.
       */
      p_regressed: number;
      /** @description The same for "the candidate passes more often". */
      p_fixed: number;
      /** @description What the smaller p-value had to be at or below for a verdict (Holm's threshold at its rank). */
      p_needed: number;
      /** @description Pairs of judged attempts over all conversations. */
      pairs: number;
      discordant: {
        /** @description Pairs only the baseline's attempt passed. */
        baseline_only: number;
        /** @description Pairs only the candidate's attempt passed. */
        candidate_only: number;
      };
      /**
       * @description Why the suite's test ended: `decided` (its boundary crossed), `futile` (out of reach within the budget), `budget`
       *     (the conversations ran out, or `repeat`); null: cut short.
       * @enum {string|null}
       */
      stop: 'decided' | 'futile' | 'budget' | null;
    };
    ComparedRevision: {
      agent: components['schemas']['AgentKey'];
      revision: components['schemas']['RunRevision'];
    };
    ComparedConversation: {
      name: string;
      index: number;
      /**
       * @description From a statistical test over the two sides' attempts (attempts in error left out): `regressed`, the candidate's
       *     pass rate is lower with the comparison's confidence; `fixed`, higher; `unchanged`, no difference found (see
       *     `statistics.detectable_drop`); `error`, a side has no attempt that could be judged; `undecided`, the
       *     comparison was cancelled before the gate decided it.
       * @enum {string}
       */
      verdict: 'regressed' | 'fixed' | 'unchanged' | 'error' | 'undecided';
      /**
       * @description Neither side met its pass rate, and the verdict is `unchanged` or `fixed`: not a regression (the gate lets it
       *     pass), but the conversation fails on the baseline too.
       */
      fails_on_both_sides: boolean;
      statistics: components['schemas']['ComparisonStatistics'];
      baseline: components['schemas']['ComparedSide'];
      candidate: components['schemas']['ComparedSide'];
      /** @description The expectations and criteria whose share of passing attempts differs, in suite order. */
      differences: components['schemas']['ComparisonDifference'][];
      /** @description The first turn where the agent's replies (text, tools, shown, ending) differ in any pair of attempts; null when they never do. */
      diverged_at_turn: number | null;
    };
    ComparedSide: {
      /** @enum {string} */
      status: 'passed' | 'flaky' | 'failed' | 'error' | 'cancelled';
      passed: boolean;
      pass_rate: number;
      attempts_passed: number;
      attempts_total: number;
      /** @description Attempts in error, left out of the test and counted apart. */
      attempts_error: number;
      /**
       * @description Attempts the simulated user spoiled, left out of the test and counted apart; in a sequential comparison
       *     each is run again at once while the side's sessions for the conversation stay within `max_attempts`.
       */
      attempts_invalid: number;
      /** @description Attempts cut short by the comparison's cancel, left out of the test and counted apart. */
      attempts_cancelled: number;
      responsibility: components['schemas']['ResponsibilityCount'];
      /** @description The pass rate of the judged attempts with its 95 % Wilson interval. */
      pass_rate_interval: components['schemas']['RateInterval'];
      /** @description pass^k for k = 1…min(judged attempts, 8), the chance that k attempts in a row all pass (unbiased estimate). */
      pass_hat_k: number[];
      latency: components['schemas']['Latency'];
      model_usage: components['schemas']['ModelUsage'];
      /** @description An attack conversation's side (only there) - how often the agent broke. */
      attack?: components['schemas']['AttackRate'];
    };
    /** @description Nearest-rank percentiles of the durations of the turns that ran; null when none did. */
    Latency: {
      p50_ms: number | null;
      p95_ms: number | null;
    };
    ComparisonDifference: {
      /** @enum {string} */
      kind: 'expectation' | 'criterion';
      /** @description The scripted turn it belongs to; null for the conversation as a whole. */
      turn: number | null;
      /** @description The expectation's kind (`tool`, `text_matches`, …) or the criterion's id. */
      name: string;
      /** @description As a person reads it (`tool lookup_order`), or the criterion's text. */
      description: string;
      baseline: components['schemas']['ComparisonTally'];
      candidate: components['schemas']['ComparisonTally'];
    };
    ComparisonTally: {
      /** @description Attempts in which it held. */
      passed: number;
      /** @description Attempts in which it was evaluated (a skipped turn's are not). */
      evaluated: number;
      /** @description The evidence (or the judge's reasoning) of the first attempt that failed it, else of the first that passed it. */
      evidence: string | null;
    };
    /** @description How often the judge agrees with a person, per criterion and over all of them. */
    JudgeCheckReport: {
      /** @description The agents the transcripts are of. */
      agents: components['schemas']['AgentKey'][];
      /** @description The seed the judge's calls carried. */
      seed: number;
      /** @description The version of the judge's prompt, as in a run report. */
      prompt_version: string;
      /** @description Labelled rulings the judge was asked for. */
      labelled: number;
      min_agreement: number | null;
      /**
       * @description Every criterion with a compared ruling has an agreement of at least `min_agreement`; null without
       *     `min_agreement`, or when no ruling could be compared.
       */
      meets_min_agreement: boolean | null;
      overall: components['schemas']['JudgeAgreement'];
      /** @description In the order first labelled; a criterion is its id and text together. */
      criteria: components['schemas']['JudgeCheckCriterion'][];
      model_usage: components['schemas']['ModelUsage'];
      notes: components['schemas']['Notes'];
    };
    JudgeCheckCriterion: {
      id: string;
      text: string;
      statistics: components['schemas']['JudgeAgreement'];
      /** @description Every compared ruling where the judge and the person differ, in input order. */
      disagreements: components['schemas']['JudgeDisagreement'][];
    };
    /**
     * @description The person's labels against the judge's rulings (`inconclusive` counts as not passed): the 2×2 table, the
     *     share of agreement, Cohen's κ, and the two error rates.
     */
    JudgeAgreement: {
      /** @description Labelled rulings the judge gave. */
      compared: number;
      /** @description Labelled rulings the model could not give (see `notes`); never compared. */
      not_judged: number;
      both_passed: number;
      both_failed: number;
      /** @description The person labelled `failed`, the judge passed. */
      false_passes: number;
      /** @description The person labelled `passed`, the judge did not pass. */
      false_fails: number;
      /** @description (both_passed + both_failed) / compared; null with nothing compared. */
      agreement: number | null;
      kappa: components['schemas']['JudgeKappa'];
      /** @description Of the rulings the person failed, the share the judge passed; null without one. */
      false_pass_rate: number | null;
      /** @description Of the rulings the person passed, the share the judge did not; null without one. */
      false_fail_rate: number | null;
    };
    /**
     * @description Cohen's κ with its 95 % interval, κ ± 1.96 SE with the large-sample standard error of Fleiss, Cohen &
     *     Everitt (1969), cut to [−1, 1]. Every number is null when κ is undefined (`note` says why): nothing
     *     compared, or every label one class (chance agreement is then the judge's own rate, and κ is 0 whatever the
     *     judge does). When the judge ruled every one alike, κ is 0 by construction and the interval null (`note`).
     */
    JudgeKappa: {
      estimate: number | null;
      standard_error: number | null;
      low: number | null;
      high: number | null;
      note: string | null;
    };
    JudgeDisagreement: {
      /** @description Where the transcript is, e.g. `reports[0] "order" attempt 2` or `items[3]`. */
      item: string;
      /** @description The turn of a turn's criterion (`expect.judge`), ruled on over the transcript up to it. */
      turn: number | null;
      /**
       * @description The person's ruling.
       * @enum {string}
       */
      label: 'passed' | 'failed';
      /**
       * @description The judge's ruling, the majority of its votes.
       * @enum {string}
       */
      verdict: 'passed' | 'failed' | 'inconclusive';
      /** @description The judge's reasoning. */
      reasoning: string;
      votes: number;
      /** @description Votes for the verdict. */
      agreement: number;
    };
    /** @enum {string} */
    RunKind: 'run' | 'comparison';
    RunMove: {
      /** @description The pod it ran on. */
      from: string;
      /** @description The pod it continues on. */
      to: string;
      /** Format: date-time */
      at: string;
      /**
       * @description `drain`: its pod got SIGTERM and handed it over; `takeover`: its pod stopped answering and a sibling took it over.
       * @enum {string}
       */
      cause: 'drain' | 'takeover';
      /** @description Rounds completed before the move (over all conversations); they were not run again. */
      rounds_completed: number;
      /** @description Attempts in flight at the move, run again on the new pod (never counted twice). */
      attempts_rerun: number;
    };
  };
  responses: never;
  parameters: never;
  requestBodies: never;
  headers: never;
  pathItems: never;
};
