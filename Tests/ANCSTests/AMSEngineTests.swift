// The AMS client and server engines on virtual time, wired to each other
// through `MediaRig` (a link that answers each ATT operation in turn, or
// holds them), and the phone's misbehaviours: a value cut to the MTU, AMS
// removed and back, registering before the notifications are on (0xA0), a
// command the player does not support, answers that come late or never.

import Testing
@testable import ANCS

/// An AMSClient and an AMSServer on one link. Each client action is
/// performed in order; the server's answer to a write comes before the
/// notifications the write causes, as on an iPhone.
struct MediaRig {
    var client: AMSClient
    var server: AMSServer
    let connection = ConnectionID(7)
    var mtu: Int
    var now = Timestamp.zero
    var events: [AMSClientEvent] = []
    var serverEvents: [AMSServerEvent] = []
    /// What the client wrote (characteristic, bytes) and read, in order.
    var operations: [String] = []
    /// CCCD writes of Entity Update the phone loses (answered success, never applied).
    var lostEntityUpdateSubscriptions = 0
    /// Hold every write and read unanswered (`answerHeld` answers them).
    var holding = false
    var held: [AMSClientAction] = []

    init(player: MediaPlayer, mtu: Int = 185, configuration: AMSClientConfiguration = AMSClientConfiguration()) {
        client = AMSClient(configuration: configuration)
        server = AMSServer(player: player)
        self.mtu = mtu
    }

    mutating func linkUp() {
        server.linkUp(connection, mtu: mtu)
        perform(client.linkUp(at: now))
    }

    mutating func advance(_ seconds: Int64) {
        now = now + .seconds(seconds)
        perform(client.tick(at: now))
    }

    @discardableResult
    mutating func command(_ command: RemoteCommandID) -> AMSRequestID {
        let request = client.perform(command, at: now)
        perform(request.actions)
        return request.id
    }

    mutating func answerHeld() {
        let actions = held
        held = []
        for action in actions { answer(action) }
    }

    mutating func perform(_ actions: [AMSClientAction]) {
        for action in actions {
            switch action {
            case .emit(let event): events.append(event)
            case .subscribe(let characteristic):
                operations.append("subscribe \(characteristic.identifier)")
                if characteristic == .entityUpdate && lostEntityUpdateSubscriptions > 0 {
                    lostEntityUpdateSubscriptions -= 1
                } else {
                    deliver(server.setSubscription(connection, characteristic, enabled: true))
                }
                perform(client.subscriptionCompleted(characteristic, .success, at: now))
            case .unsubscribe(let characteristic):
                operations.append("unsubscribe \(characteristic.identifier)")
                deliver(server.setSubscription(connection, characteristic, enabled: false))
            case .write(let characteristic, let bytes, _):
                operations.append("write \(characteristic.identifier) \(Hex.string(bytes))")
                if holding { held.append(action) } else { answer(action) }
            case .read(let characteristic, _):
                operations.append("read \(characteristic.identifier)")
                if holding { held.append(action) } else { answer(action) }
            }
        }
    }

    mutating func answer(_ action: AMSClientAction) {
        switch action {
        case .write(let characteristic, let bytes, let token):
            let actions = server.receivedWrite(connection, characteristic, bytes, at: now)
            for case .respond(_, let result) in actions { perform(client.writeCompleted(token, result, at: now)) }
            deliver(actions)
        case .read(let characteristic, let token):
            perform(client.readCompleted(token, server.read(connection, characteristic, at: now), at: now))
        default: break
        }
    }

    /// The server's notifications to the client, and its events.
    mutating func deliver(_ actions: [AMSServerAction]) {
        for action in actions {
            switch action {
            case .notify(_, .remoteCommand, let bytes): perform(client.received(remoteCommand: bytes, at: now))
            case .notify(_, .entityUpdate, let bytes): perform(client.received(entityUpdate: bytes, at: now))
            case .notify(_, .entityAttribute, _): Issue.record("Entity Attribute does not notify")
            case .respond: break
            case .emit(let event): serverEvents.append(event)
            }
        }
    }

    mutating func update(_ change: (inout MediaPlayer) -> Void) {
        deliver(server.update(at: now, change))
    }

    var completions: [AMSRequestID: [AMSClientError?]] {
        var result: [AMSRequestID: [AMSClientError?]] = [:]
        for case .commandCompleted(let id, let error) in events { result[id, default: []].append(error) }
        return result
    }

    var readyCount: Int { events.count { $0 == .ready } }
}

let queenTracks = [
    MediaTrack(artist: "Queen", album: "A Night at the Opera", title: "Bohemian Rhapsody", duration: 354.32),
    MediaTrack(artist: "Queen", album: "News of the World", title: "We Will Rock You", duration: 122.5),
]

@Suite struct AMSEngineTests {
    @Test func setsUpAndKnowsWhatIsPlaying() {
        var rig = MediaRig(player: MediaPlayer(name: "Music", tracks: queenTracks, state: .playing))
        rig.linkUp()
        #expect(rig.readyCount == 1)
        #expect(rig.client.isReady)
        #expect(rig.operations == [
            "subscribe remoteCommand", "subscribe entityUpdate",
            "write entityUpdate 00000102", "write entityUpdate 0100010203", "write entityUpdate 0200010203"])
        let playing = rig.client.nowPlaying
        #expect(playing.playerName == "Music")
        #expect(playing.title == "Bohemian Rhapsody")
        #expect(playing.artist == "Queen")
        #expect(playing.album == "A Night at the Opera")
        #expect(playing.duration == 354.32)
        #expect(playing.queueIndex == 0 && playing.queueCount == 2)
        #expect(playing.shuffleMode == .off && playing.repeatMode == .off)
        #expect(playing.volume == 0.5)
        #expect(playing.playback == PlaybackInfo(state: .playing, rate: 1, elapsed: 0))
        #expect(rig.client.supportedCommands == RemoteCommandID.all)
        // The elapsed time runs at the rate told, and stops at the duration.
        rig.now = rig.now + .seconds(90)
        #expect(playing.elapsed(at: rig.now) == 90)
        #expect(playing.elapsed(at: rig.now + .seconds(3600)) == 354.32)
        #expect(rig.serverEvents.count { if case .registered = $0 { true } else { false } } == 3)
    }

    @Test func aTitleLongerThanOneNotificationIsReadInFull() {
        let long = String(repeating: "Ünïcödé ", count: 6) + "end"  // 57 bytes
        var rig = MediaRig(player: MediaPlayer(tracks: [MediaTrack(artist: "A", title: long, duration: 60)]), mtu: 23)
        rig.linkUp()
        let titles = rig.events.compactMap { event -> (AttributeValue, Bool)? in
            if case .updated(.title, let value, let truncated) = event { return (value, truncated) }
            return nil
        }
        #expect(titles.count == 2)
        #expect(titles.first?.1 == true)
        let cut = titles.first?.0 ?? .empty
        #expect(cut.count <= 17 && cut.count > 0)
        #expect(long.utf8.starts(with: cut.bytes))
        #expect(titles.last?.0.string == long && titles.last?.1 == false)
        #expect(rig.client.nowPlaying.title?.string == long)
        // The selection and its read are adjacent: nothing between them.
        let select = rig.operations.firstIndex(of: "write entityAttribute 0202")
        #expect(select.map { rig.operations[$0 + 1] } == "read entityAttribute")
        // A value that fits is not read again.
        #expect(rig.operations.count { $0 == "read entityAttribute" } == 1)
    }

    @Test func aTruncatedValueThePhoneEmptiesBeforeTheReadIsEmpty() {
        var rig = MediaRig(player: MediaPlayer(tracks: [MediaTrack(artist: String(repeating: "x", count: 40), title: "t", duration: 1)]), mtu: 23)
        rig.holding = true
        rig.linkUp()
        rig.answerHeld()  // the registrations, one at a time
        rig.answerHeld()
        rig.answerHeld()
        rig.answerHeld()  // the artist's selection
        rig.update { $0.tracks = [] }  // the artist is now empty
        rig.answerHeld()  // the read: 0xA2 Absent Attribute
        #expect(rig.client.nowPlaying.artist == nil)
        #expect(rig.events.last == .updated(.artist, .empty, isTruncated: false))
    }

    @Test func amsRemovedAndBack() {
        var rig = MediaRig(player: MediaPlayer(tracks: queenTracks, state: .playing))
        rig.linkUp()
        rig.perform(rig.client.serviceChanged(published: false, at: rig.now))
        #expect(rig.events.last == .ended(.serviceUnpublished))
        #expect(rig.client.nowPlaying.isEmpty)
        #expect(rig.client.supportedCommands == nil)
        let refused = rig.command(.play)
        #expect(rig.completions[refused] == [.notReady])
        // The service comes back: subscribed and registered again.
        rig.server.linkDown(rig.connection)
        rig.server.linkUp(rig.connection, mtu: rig.mtu)
        rig.perform(rig.client.serviceChanged(published: true, at: rig.now))
        #expect(rig.readyCount == 2)
        #expect(rig.client.nowPlaying.title == "Bohemian Rhapsody")
    }

    @Test func registeringBeforeTheNotificationsAreOnIsRefusedThenMended() {
        var rig = MediaRig(player: MediaPlayer(tracks: queenTracks))
        rig.lostEntityUpdateSubscriptions = 1  // the phone did not take the first CCCD write
        rig.linkUp()
        #expect(rig.serverEvents.contains(.refused(rig.connection, .entityUpdate, AMSErrorCode.invalidState.code)))
        #expect(rig.readyCount == 1)
        #expect(rig.operations.count { $0 == "subscribe entityUpdate" } == 2)
        #expect(rig.client.nowPlaying.title == "Bohemian Rhapsody")
    }

    @Test func aPhoneThatKeepsRefusingIsAskedLessAndLessOften() {
        var rig = MediaRig(player: MediaPlayer(tracks: queenTracks))
        rig.lostEntityUpdateSubscriptions = .max
        rig.linkUp()
        #expect(rig.events.contains(.setupFailed(.attError(AMSErrorCode.invalidState.code))))
        #expect(!rig.client.isReady)
        var attempts: [Int] = []
        for _ in 0..<(4 * 3600 / 5) {
            rig.advance(5)
            attempts.append(rig.operations.count { $0 == "write entityUpdate 00000102" })
        }
        // The first set-up registers twice (0xA0, the CCCD written again,
        // 0xA0); then once per retry, after 15 s, 30 s, 60 s, 120 s, then
        // every 240 s: 2 + 4 + (4 h − 225 s) / 240 s.
        let expected: Int = 2 + 4 + (4 * 3600 - 225) / 240
        #expect(attempts.last == expected)
        #expect(rig.readyCount == 0)
    }

    @Test func aCommandThePlayerDoesNotSupportIsNotWritten() {
        var rig = MediaRig(player: MediaPlayer(tracks: queenTracks, supportedCommands: [.play, .pause]))
        rig.linkUp()
        let writes = rig.operations.count
        let refused = rig.command(.nextTrack)
        #expect(rig.completions[refused] == [.unsupported])
        #expect(rig.operations.count == writes)
        let played = rig.command(.play)
        #expect(rig.completions[played] == [nil])
        #expect(rig.operations.last == "write remoteCommand 00")
        #expect(rig.serverEvents.last == .command(rig.connection, .play, performed: true))
        #expect(rig.client.nowPlaying.playback?.state == .playing)
        // The player supports more now: the list is notified, the command allowed.
        rig.update { $0.supportedCommands = RemoteCommandID.all }
        let next = rig.command(.nextTrack)
        #expect(rig.completions[next] == [nil])
        #expect(rig.client.nowPlaying.title == "We Will Rock You")
        #expect(rig.client.nowPlaying.queueIndex == 1)
    }

    @Test func aCommandUnansweredTimesOutOnceAndKeepsTheLinkToOneRequest() {
        var rig = MediaRig(player: MediaPlayer(tracks: queenTracks))
        rig.linkUp()
        rig.holding = true
        let play = rig.command(.play)
        let pause = rig.command(.pause)
        #expect(rig.operations.last == "write remoteCommand 00")
        rig.advance(10)
        #expect(rig.completions[play] == [.timedOut])
        #expect(rig.completions[pause] == nil)
        #expect(rig.operations.last == "write remoteCommand 00")  // pause waits: the phone may still answer play
        rig.answerHeld()  // the late answer to play: not told again, and pause goes
        #expect(rig.completions[play] == [.timedOut])
        #expect(rig.operations.last == "write remoteCommand 01")
        rig.answerHeld()
        #expect(rig.completions[pause] == [nil])
        // An answer that never comes frees the link after ATT's 30 s.
        let toggle = rig.command(.togglePlayPause)
        let next = rig.command(.nextTrack)
        rig.advance(10)
        #expect(rig.completions[toggle] == [.timedOut])
        rig.advance(10)
        #expect(rig.operations.last == "write remoteCommand 02")
        rig.advance(10)
        #expect(rig.operations.last == "write remoteCommand 03")
        rig.held = []
        rig.advance(10)
        #expect(rig.completions[next] == [.timedOut])
        #expect(rig.client.nextDeadline != nil)
    }

    @Test func theLinkGoingDownEndsEveryCommandOnce() {
        var rig = MediaRig(player: MediaPlayer(tracks: queenTracks))
        rig.linkUp()
        rig.holding = true
        let ids = (0..<3).map { _ in rig.command(.play) }
        rig.perform(rig.client.linkDown(at: rig.now))
        for id in ids { #expect(rig.completions[id] == [.sessionEnded]) }
        #expect(rig.events.last == .ended(.linkDown))
        #expect(rig.client.nextDeadline == nil)
        // A late answer from the old link changes nothing.
        rig.answerHeld()
        for id in ids { #expect(rig.completions[id] == [.sessionEnded]) }
    }

    @Test func anOperationOnTheAirWhenAMSGoesKeepsTheLinkUntilItsAnswer() {
        var rig = MediaRig(player: MediaPlayer(tracks: queenTracks))
        rig.linkUp()
        rig.holding = true
        let play = rig.command(.play)
        rig.perform(rig.client.serviceChanged(published: false, at: rig.now))
        #expect(rig.completions[play] == [.sessionEnded])
        rig.server.linkDown(rig.connection)
        rig.server.linkUp(rig.connection, mtu: rig.mtu)
        let before = rig.operations.count
        rig.perform(rig.client.serviceChanged(published: true, at: rig.now))
        // Subscribed again, but the registration waits for Play's answer.
        #expect(rig.operations.dropFirst(before).allSatisfy { $0.hasPrefix("subscribe") })
        rig.answerHeld()  // Play's late answer: not told again; the registration goes
        #expect(rig.completions[play] == [.sessionEnded])
        #expect(rig.operations.last == "write entityUpdate 00000102")
        // Had it never come, ATT's 30 s would have freed the slot.
        var other = MediaRig(player: MediaPlayer(tracks: queenTracks))
        other.linkUp()
        other.holding = true
        _ = other.command(.play)
        other.perform(other.client.stop(at: other.now))
        other.perform(other.client.linkUp(at: other.now))
        other.held = []
        other.advance(20)
        #expect(other.operations.last { $0.hasPrefix("write") } == "write remoteCommand 00")
        other.advance(10)
        #expect(other.operations.last { $0.hasPrefix("write") } == "write entityUpdate 00000102")
    }

    @Test func aSecondLinkUpWithoutALinkDownStartsAfresh() {
        var rig = MediaRig(player: MediaPlayer(tracks: queenTracks))
        rig.linkUp()
        rig.holding = true
        let play = rig.command(.play)
        rig.holding = false
        rig.held = []
        rig.perform(rig.client.linkUp(at: rig.now))
        #expect(rig.completions[play] == [.sessionEnded])
        #expect(rig.events.contains(.ended(.linkDown)))
        #expect(rig.readyCount == 2)
        #expect(rig.operations.count { $0 == "write entityUpdate 00000102" } == 2)
    }

    @Test func commandsBeyondTheQueueAreRefusedBusy() {
        var rig = MediaRig(player: MediaPlayer(tracks: queenTracks), configuration: AMSClientConfiguration(maximumQueuedCommands: 2))
        rig.linkUp()
        rig.holding = true
        let first = rig.command(.play)  // written
        _ = rig.command(.pause)
        _ = rig.command(.play)
        let refused = rig.command(.pause)
        #expect(rig.completions[refused] == [.busy])
        #expect(rig.completions[first] == nil)
    }

    @Test func anUpdateThatIsNotOneIsToldAndIgnored() {
        var rig = MediaRig(player: MediaPlayer(tracks: queenTracks))
        rig.linkUp()
        let before = rig.client.nowPlaying
        rig.perform(rig.client.received(entityUpdate: [2, 2], at: rig.now))
        #expect(rig.events.last == .invalidUpdate(MediaDecodingError(.entityUpdateLength(actual: 2), at: 2)))
        #expect(rig.client.nowPlaying == before)
        // An attribute AMS does not define is told, and kept out of the model.
        rig.perform(rig.client.received(entityUpdate: [2, 9, 0, 0x41], at: rig.now))
        #expect(rig.events.last == .updated(MediaAttribute(.track, 9), "A", isTruncated: false))
        #expect(rig.client.nowPlaying == before)
    }

    @Test func theServerRefusesWhatAnIPhoneRefuses() {
        var server = AMSServer(player: MediaPlayer(tracks: queenTracks))
        let link = ConnectionID(1)
        server.linkUp(link, mtu: 23)
        let now = Timestamp.zero
        #expect(server.receivedWrite(link, .entityUpdate, [2, 2], at: now).first == .respond(link, .attError(0xA0)))
        #expect(server.receivedWrite(link, .entityAttribute, [2, 2], at: now).first == .respond(link, .attError(0xA0)))
        #expect(server.read(link, .entityAttribute, at: now) == .attError(0xA0))
        _ = server.setSubscription(link, .entityUpdate, enabled: true)
        #expect(server.receivedWrite(link, .entityUpdate, [2], at: now).first == .respond(link, .attError(0xA1)))
        #expect(server.receivedWrite(link, .entityUpdate, [9, 0], at: now).first == .respond(link, .attError(0xA1)))
        #expect(server.receivedWrite(link, .entityAttribute, [2], at: now).first == .respond(link, .attError(0xA1)))
        #expect(server.receivedWrite(link, .remoteCommand, [14], at: now).first == .respond(link, .attError(0xA1)))
        #expect(server.receivedWrite(link, .remoteCommand, [0, 1], at: now).first == .respond(link, .attError(0xA1)))
        #expect(server.read(link, .entityAttribute, at: now) == .attError(0xA1))  // nothing selected
        #expect(server.receivedWrite(link, .entityAttribute, [2, 1], at: now) == [.respond(link, .success)])
        #expect(server.read(link, .entityAttribute, at: now) == .value(Array("A Night at the Opera".utf8)))
        #expect(server.read(link, .remoteCommand, at: now) == .attError(.readNotPermitted))
        // A registration replaces the entity's last one; its values are notified at once.
        let registered = server.receivedWrite(link, .entityUpdate, [2, 2], at: now)
        #expect(registered.contains(.notify(link, .entityUpdate, [2, 2, 0] + Array("Bohemian Rhapsody".utf8))))
        _ = server.receivedWrite(link, .entityUpdate, [2, 0], at: now)
        #expect(server.registrations(of: link) == [EntityRegistration(.track, [0])])
        // Only registered values that changed are notified: the second track's artist is the first's.
        #expect(server.update(at: now) { $0.index = 1 }.isEmpty)
        let changed = server.update(at: now) {
            $0.tracks.append(MediaTrack(artist: "Freddie Mercury", title: "Love Kills", duration: 268))
            $0.index = 2
        }
        #expect(changed == [.notify(link, .entityUpdate, [2, 0, 0] + Array("Freddie Mercury".utf8))])
    }

    @Test func theServerPlayerPerformsCommandsAsTheMusicAppDoes() {
        var player = MediaPlayer(tracks: queenTracks)
        let start = Timestamp.zero
        func perform(_ command: RemoteCommandID, at seconds: Int64) -> Bool { player.perform(command, at: start + .seconds(seconds)) }
        #expect(perform(.play, at: 0))
        #expect(player.elapsed(at: start + .seconds(5)) == 5)
        #expect(perform(.pause, at: 5))
        #expect(player.elapsed(at: start + .seconds(60)) == 5)
        #expect(perform(.previousTrack, at: 60))  // past 3 s: back to the start
        #expect(player.index == 0 && player.elapsed(at: start + .seconds(60)) == 0)
        #expect(perform(.nextTrack, at: 60))
        #expect(player.index == 1)
        #expect(perform(.nextTrack, at: 60))
        #expect(player.index == 1)  // the end of the queue, repeat off
        #expect(perform(.advanceRepeatMode, at: 60))
        #expect(player.repeatMode == .one)
        #expect(perform(.nextTrack, at: 60))
        #expect(player.index == 0)  // repeating: wraps
        for _ in 0..<20 { _ = perform(.volumeUp, at: 60) }
        #expect(player.volume == 1)
        #expect(perform(.skipForward, at: 60))
        #expect(player.elapsed(at: start + .seconds(60)) == 15)
        player.supportedCommands = [.play]
        #expect(!perform(.pause, at: 60))
    }
}

@Suite struct CTSEngineTests {
    static let saturday = CurrentTime(year: 2026, month: 11, day: 28, hour: 23, minute: 59, second: 30, dayOfWeek: 6)
    static let paris = LocalTimeInformation(timeZone: 4, dstOffset: 0)

    @Test func readsTheTimeAndTheZoneOneAtATimeThenFollowsTheClock() {
        var client = CTSClient()
        var server = CTSServer(time: Self.saturday, at: .zero, localTimeInformation: Self.paris)
        let link = ConnectionID(1)
        var now = Timestamp.zero
        var events: [CTSClientEvent] = []
        var reads: [CTSCharacteristic] = []
        func run(_ actions: [CTSClientAction]) {
            for action in actions {
                switch action {
                case .emit(let event): events.append(event)
                case .subscribe: server.setSubscription(link, enabled: true)
                case .unsubscribe: server.setSubscription(link, enabled: false)
                case .read(let characteristic, let token):
                    reads.append(characteristic)
                    run(client.readCompleted(token, server.read(characteristic, at: now), at: now))
                }
            }
        }
        run(client.linkUp(at: now))
        #expect(reads == [.currentTime, .localTimeInformation])
        #expect(events == [.currentTime(Self.saturday), .localTimeInformation(Self.paris)])
        now = now + .seconds(45)
        let later = client.phoneTime(at: now)
        #expect(later.map { [$0.year, $0.month, $0.day, $0.hour, $0.minute, $0.second, $0.dayOfWeek] as [Int] } == [2026, 11, 29, 0, 0, 15, 7])
        // The phone moves to New York: the time is notified with the zone's change, and the zone read again.
        var moved = Self.saturday
        moved.hour = 17
        let actions = server.set(moved, zone: LocalTimeInformation(timeZone: -20, dstOffset: 0), at: now)
        #expect(actions.count == 1)
        for case .notify(_, .currentTime, let bytes) in actions { run(client.received(currentTime: bytes, at: now)) }
        #expect(reads == [.currentTime, .localTimeInformation, .localTimeInformation])
        #expect(client.localTimeInformation?.utcOffsetMinutes == -300)
        #expect(client.currentTime?.hour == 17)
    }

    @Test func stopTurnsTheNotificationsOffAndReadsNothingMore() {
        var client = CTSClient()
        var now = Timestamp.zero
        var reads: [WriteToken] = []
        var events: [CTSClientEvent] = []
        func run(_ actions: [CTSClientAction]) {
            for action in actions {
                if case .read(_, let token) = action { reads.append(token) }
                if case .emit(let event) = action { events.append(event) }
            }
        }
        #expect(client.stop(at: now).isEmpty)  // never linked: nothing to undo
        run(client.linkUp(at: now))
        #expect(reads.count == 1)
        // Stopped with the time's read on the air: off, and its answer not told.
        #expect(client.stop(at: now) == [.unsubscribe(.currentTime)])
        #expect(client.stop(at: now).isEmpty)
        run(client.readCompleted(reads[0], .value(Self.saturday.encode()), at: now))
        run(client.received(currentTime: Self.saturday.encode(), at: now))
        now = now + .seconds(60)
        run(client.tick(at: now))
        #expect(reads.count == 1)
        #expect(events.isEmpty)
        #expect(client.nextDeadline == nil)
        // A new link starts again.
        run(client.linkUp(at: now))
        #expect(reads.count == 2)
    }

    @Test func aReadUnansweredTimesOutAndALateAnswerIsIgnored() {
        var client = CTSClient()
        var now = Timestamp.zero
        var tokens: [WriteToken] = []
        var events: [CTSClientEvent] = []
        func run(_ actions: [CTSClientAction]) {
            for action in actions {
                if case .read(_, let token) = action { tokens.append(token) }
                if case .emit(let event) = action { events.append(event) }
            }
        }
        run(client.linkUp(at: now))
        #expect(tokens.count == 1)
        now = now + .seconds(10)
        run(client.tick(at: now))
        #expect(events == [.failed(.currentTime, .timedOut)])
        #expect(tokens.count == 1)  // the zone's read waits for the late answer or ATT's 30 s
        run(client.readCompleted(tokens[0], .value(Self.saturday.encode()), at: now))
        #expect(events.count == 1)
        #expect(client.currentTime == nil)
        #expect(tokens.count == 2)
        run(client.readCompleted(tokens[1], .value([1, 2, 3]), at: now))
        #expect(events.last == .failed(.localTimeInformation, .invalid(MediaDecodingError(.localTimeInformationLength(actual: 3), at: 2))))
        run(client.received(currentTime: Self.saturday.encode(), at: now))
        #expect(events.last == .currentTime(Self.saturday))
        run(client.linkDown(at: now))
        run(client.received(currentTime: Self.saturday.encode(), at: now))
        #expect(events.count == 3)
    }

    /// A watch whose first read failed would show no time for the whole
    /// connection: the read goes again 1.5 request timeouts later, three
    /// times at most per link; a value that is not one does not.
    @Test func aFailedReadIsTriedAgainThreeTimesAtMostPerLink() {
        var client = CTSClient(requestTimeout: .seconds(10))  // tried again 15 s later
        var now = Timestamp.zero
        var reads: [(CTSCharacteristic, WriteToken)] = []
        var events: [CTSClientEvent] = []
        func run(_ actions: [CTSClientAction]) {
            for action in actions {
                if case .read(let characteristic, let token) = action { reads.append((characteristic, token)) }
                if case .emit(let event) = action { events.append(event) }
            }
        }
        run(client.linkUp(at: now))
        // Refused (the link not encrypted yet, say): told, then the zone read.
        run(client.readCompleted(reads[0].1, .attError(.insufficientAuthentication), at: now))
        #expect(events == [.failed(.currentTime, .attError(.insufficientAuthentication))])
        #expect(reads.map(\.0) == [.currentTime, .localTimeInformation])
        run(client.readCompleted(reads[1].1, .value(Self.paris.encode()), at: now))
        #expect(client.nextDeadline == now + .seconds(15))
        now = now + .seconds(14)
        run(client.tick(at: now))
        #expect(reads.count == 2)
        now = now + .seconds(1)
        run(client.tick(at: now))
        #expect(reads.map(\.0) == [.currentTime, .localTimeInformation, .currentTime])
        // Unanswered this time: timed out, tried again 15 s later, once ATT's 30 s freed the slot.
        now = now + .seconds(10)
        run(client.tick(at: now))
        #expect(events.last == .failed(.currentTime, .timedOut))
        #expect(client.nextDeadline == now + .seconds(15))
        now = now + .seconds(15)
        run(client.tick(at: now))
        #expect(reads.count == 3)  // the slot still held by the unanswered read
        now = now + .seconds(5)
        run(client.tick(at: now))
        #expect(reads.count == 4)
        // The third failure is tried again; the fourth is not.
        run(client.readCompleted(reads[3].1, .transportFailure, at: now))
        now = now + .seconds(15)
        run(client.tick(at: now))
        #expect(reads.count == 5)
        run(client.readCompleted(reads[4].1, .transportFailure, at: now))
        #expect(client.nextDeadline == nil)
        now = now + .seconds(60)
        run(client.tick(at: now))
        #expect(reads.count == 5)
        #expect(client.currentTime == nil)
        // A value that is not one is not read again; a new link starts afresh.
        run(client.linkUp(at: now))
        run(client.readCompleted(reads[5].1, .value([1, 2]), at: now))
        #expect(reads.count == 7)  // the zone read next, the time not again
        run(client.readCompleted(reads[6].1, .value(Self.paris.encode()), at: now))
        now = now + .seconds(60)
        run(client.tick(at: now))
        #expect(reads.count == 7)
        #expect(client.nextDeadline == nil)
        run(client.linkUp(at: now))
        run(client.readCompleted(reads[7].1, .value(Self.saturday.encode()), at: now))
        #expect(client.currentTime == Self.saturday)
    }
}
