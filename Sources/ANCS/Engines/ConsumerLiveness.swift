// Consumer liveness and health: what the phone's answers say about whether
// notifications reach the accessory, and what the consumer does about it
// (docs/REAL-IPHONE.md, "When notifications stop"). The engine's inputs (Consumer.swift)
// call these as they learn something of the phone; `tick` takes the
// liveness step `probeTime` names.
//
// Health (`ConsumerHealth`):
//
//   healthy ──a subscription (or a write) refused with an ATT error──► waitingForPermission
//           (asked again retryInterval after the phone's last answer)
//   healthy ──two Control Point writes refused 0x03 in a row──► notShared
//           (a probe every retryInterval; no display fetch meanwhile)
//   healthy ──probe unanswered, or answered with attributes (a notification
//           NS never announced); a refresh that announces one newer than
//           every announcement; a display fetch unanswered twice; NS silent
//           for silenceLimit; a write answered 0xFD──► resubscribing
//   healthy ──host: the phone forgot the bond──► bondLost
//   waitingForPermission ──what was refused works (subscribed; an NS event;
//                          a write answered)──► healthy
//   resubscribing | bondLost ──an NS event, a write answered──► healthy
//   notShared ──a write answered──► resubscribing (sharingRestored)
//           (an NS event is no proof: a phone may announce while it refuses)
//
// The probe, Get Notification Attributes (AppIdentifier) for the UID after
// the highest announced (not live: a working phone answers 0xA2; one that
// answers with attributes holds a notification never announced), goes out
// only when nothing is queued, written or wanted (while not shared: at its
// retry interval whatever waits), `probeInterval` after the phone was last
// heard, and does not count against the pipelining depth: an application
// request waits at most for the probe's write result. Retries take the same
// turn (`probeTime`), at `retryInterval`. The probe alone can be fooled: a
// notification the person cleared on the phone answers 0xA2 as a working
// phone does. So an interval's probe answered 0xA2 is followed by a refresh
// (`refresh`): Notification Source subscribed again in place, the phone
// announces everything it holds as PreExisting, and one newer than every
// announcement means Notification Source had stopped. Data Source is checked
// when it matters: a display fetch that times out is written again once
// (the first answer to either write serves it, `write`), and when that one
// times out too, the consumer subscribes again.

extension Consumer {
    /// When the next liveness step is due, if one may go: with the link up
    /// and ANCS published, no subscription being made, nothing queued,
    /// written or wanted, and no probe out. What was refused (a
    /// subscription, or Control Point writes) is asked again
    /// `retryInterval` after the phone was last heard; else the probe goes
    /// `probeInterval` after it (`retryInterval` in a new session).
    /// `tick` takes the step: subscribe again when a subscription is
    /// missing, else write the probe.
    var probeTime: Timestamp? {
        guard link == .waiting || link == .active, session.probeKey == nil, writeSlot.isFree,
              isNotShared || session.entries.isEmpty && session.wantedCount == 0 else { return nil }
        // (Idle: no Data Source either. One 0x03 asks again soon: two tell "not shared".)
        // A new session is probed sooner, but not at once: after its
        // PreExisting announcements (the probe asks for the UID after them).
        var interval = configuration.probeNanoseconds
        if retrying {
            interval = configuration.retryNanoseconds &<< retries
        } else if interval > 0 && probeSoon {
            // (With retries off, a new session's probe goes at once.)
            return lastHeard.adding(nanoseconds: configuration.retryNanoseconds)
        }
        guard interval > 0 else { return nil }
        return lastHeard.adding(nanoseconds: interval)
    }

    /// Something is missing that the phone refused or failed (a
    /// subscription, Control Point writes): the next step retries it.
    var retrying: Bool { !dataSourceAvailable || isRefused || lastWriteNotPermitted }

    /// Notification Source's silence is watched in an active session that is shared.
    var watchesSilence: Bool {
        configuration.silenceNanoseconds > 0 && link == .active && !isNotShared
    }

    var isNotShared: Bool {
        if case .notShared = health { true } else { false }
    }

    /// The phone refused something: a subscription, or Control Point writes.
    var isRefused: Bool {
        switch health {
        case .waitingForPermission, .notShared: true
        default: false
        }
    }

    // MARK: - Health

    /// The host found that the phone no longer has this accessory's bond
    /// (reconnecting, encryption failed for a missing key): told as
    /// `.health(.bondLost)` until the phone answers again, after pairing anew.
    public mutating func bondLost(at now: Timestamp, into actions: inout [ConsumerAction]) {
        if case .bondLost = health { return }
        setHealth(.bondLost, into: &actions)
    }

    public mutating func bondLost(at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        bondLost(at: now, into: &actions)
        return actions
    }

    /// Tells a new state (each caller makes sure that it is a change, with
    /// a pattern rather than an `==` of the whole enum: smaller firmware).
    @inline(never)
    mutating func setHealth(_ state: ConsumerHealth, into actions: inout [ConsumerAction]) {
        retries = 0  // a new state: what it refuses is asked again soon
        health = state
        actions.appendOutOfLine(.emit(.health(state)))
    }

    /// A Control Point write was taken (`.controlPoint`) or answered by
    /// ANCS (an ANCS error: `.dataSource`, as a response would be).
    mutating func answered(_ what: ANCSCharacteristic, into actions: inout [ConsumerAction]) {
        lastWriteNotPermitted = false
        works(what, into: &actions)
    }

    /// The phone answered: a Notification Source event
    /// (`.notificationSource`), a Control Point write taken (`.controlPoint`)
    /// or answered by ANCS (`.dataSource`). A state it disproves ends, and
    /// the consumer is healthy again. A refused Control Point ends with a
    /// write taken or answered; subscribing again needs ANCS itself to
    /// answer (a phone whose subscriptions are gone still takes writes);
    /// a refused subscription ends only when it is made (`subscription`).
    /// (A subscription made proves nothing more than itself: with sharing
    /// off, the phone accepts them all.)
    @inline(never)
    mutating func works(_ what: ANCSCharacteristic, into actions: inout [ConsumerAction]) {
        switch health {
        case .healthy:
            return
        case .waitingForPermission(let refused, _):
            guard refused == .controlPoint && what != .notificationSource else { return }
        case .notShared:
            // A Control Point write answered: shared again, and a new session
            // hears what the phone holds (the phone may not announce it, and
            // the fetches refused meanwhile are asked anew). An announcement
            // proves nothing (a phone may announce while it refuses every
            // write): the probe, at its retry interval, asks.
            if what != .notificationSource { session.pendingResubscribe = .sharingRestored }
            return
        case .resubscribing:
            guard what != .controlPoint else { return }
        case .bondLost:
            break
        }
        setHealth(.healthy, into: &actions)
    }

    /// A subscription's result: made, it ends the wait for its refusal;
    /// refused, the consumer waits for the person.
    @inline(never)
    mutating func subscription(_ what: ANCSCharacteristic, _ result: ATTResult, into actions: inout [ConsumerAction]) {
        guard result == .success else { return refused(what, result, into: &actions) }
        if case .waitingForPermission(what, _) = health { setHealth(.healthy, into: &actions) }
    }

    /// The phone refused `what` with `result`: waiting for the person
    /// (an ATT error keeps its code: never a transport failure), and
    /// asking again at the retry interval (`probeTime`).
    @inline(never)
    mutating func refused(_ what: ANCSCharacteristic, _ result: ATTResult, into actions: inout [ConsumerAction]) {
        guard case .attError(let code) = result else { return }
        // Told once per code: both subscriptions refused in one attempt,
        // or attempt after attempt, is one state (the first refused named).
        if case .waitingForPermission(_, code) = health {} else { setHealth(.waitingForPermission(what, code), into: &actions) }
    }

    /// Writes the liveness probe: Get Notification Attributes (AppIdentifier)
    /// for the UID after the highest announced (iOS numbers its
    /// notifications up): not live, unless Notification Source failed to
    /// announce it. The highest is kept from session to session: asked too
    /// high, the probe only misses that check once.
    mutating func writeProbe(at now: Timestamp, into actions: inout [ConsumerAction]) {
        // An interval's probe (not a new session's, whose subscription is
        // fresh) is followed by a refresh of Notification Source when the
        // phone answers it as a working phone does.
        session.probeRefreshes = !probeSoon
        probeSoon = false
        let index = session.enqueue(Self.appIdentifierCommand(probeUID), waiter: nil)
        session.probeKey = session.nextEntryKey  // (the key `enqueue` just gave it)
        write(at: index, now, into: &actions)
    }

    /// Get Notification Attributes for the AppIdentifier alone: the probe,
    /// and the display's first fetch when apps are hidden.
    @inline(never)
    static func appIdentifierCommand(_ uid: UInt32) -> [UInt8] {
        [
            CommandID.getNotificationAttributes.rawValue,
            UInt8(truncatingIfNeeded: uid), UInt8(truncatingIfNeeded: uid >> 8),
            UInt8(truncatingIfNeeded: uid >> 16), UInt8(truncatingIfNeeded: uid >> 24),
            NotificationAttributeID.appIdentifier.rawValue,
        ]
    }

    /// Notification Source subscribed again in place, the session kept
    /// (after an interval's probe the phone answered 0xA2): the phone
    /// announces everything it holds again, as PreExisting. No single
    /// notification can fool it, as it can the probe (one the person
    /// cleared on the phone answers 0xA2 as a working phone does): a
    /// notification newer than every announcement means Notification
    /// Source had stopped (`received(notificationSource:)`), and a new
    /// session starts; the others are known and change nothing. It also
    /// mends a lost subscription by itself. Costs two CCCD writes and one
    /// 8-byte notification per notification held, no fetch.
    mutating func refresh(into actions: inout [ConsumerAction]) {
        // (Active: `refreshDue` is set by a probe's end, and a session's end clears it.)
        session.refreshDue = false
        refreshing = true
        link = .subscribingNotificationSource
        actions.appendOutOfLine(.unsubscribe(.notificationSource))
        actions.appendOutOfLine(.subscribe(.notificationSource))
    }

    /// Subscribes again for `reason`, decided during this input.
    mutating func resubscribe(_ reason: ResubscribeReason, into actions: inout [ConsumerAction]) {
        session.pendingResubscribe = nil
        guard isInSession else { return }
        // Confirmed by the new session's first probe; if the last one was
        // never confirmed, only after the probe interval (no loop of
        // subscribing and probing a phone that does not answer).
        var soon = true
        if case .resubscribing(let last) = health {
            soon = false
            if last != reason { setHealth(.resubscribing(reason), into: &actions) }  // (the same again is no change)
        } else {
            setHealth(.resubscribing(reason), into: &actions)
        }
        restartSession(into: &actions)
        probeSoon = soon
    }
}
