// MediaClient (the AMS and CTS clients as an actor) on a simulated iPhone
// (MediaLoopbackLink), on virtual time: set up, now playing, commands, the
// phone's clock; each run also against a slow link (every operation takes
// 2 s, as a busy stack's can), where commands queue behind each other and
// ATT's one-request rule must still hold; a link that drops mid-operation;
// a write never answered; AMS removed and back; the run ending with
// commands waiting.

import Testing
import ANCS
import ANCSRuntime
import ANCSSimulation

@Suite struct MediaClientTests {
    static let tracks = [
        MediaTrack(artist: "Queen", album: "A Night at the Opera", title: "Bohemian Rhapsody", duration: 354.32),
        MediaTrack(artist: "Queen", album: "News of the World", title: "We Will Rock You", duration: 122.5),
    ]
    static let saturday = CurrentTime(year: 2026, month: 11, day: 28, hour: 14, minute: 53, second: 7, dayOfWeek: 6)
    static let paris = LocalTimeInformation(timeZone: 4, dstOffset: 0)

    struct Setup {
        let simulation = Simulation()
        let link: MediaLoopbackLink
        let client: MediaClient
        let outputs = Box<[MediaClientOutput]>()
        /// Set when the client's `run()` returns.
        let ran = Box<Bool>()

        init(delay: Duration, player: MediaPlayer = MediaPlayer(tracks: MediaClientTests.tracks, state: .playing), mtu: Int = 185) {
            link = MediaLoopbackLink(player: player, time: MediaClientTests.saturday, zone: MediaClientTests.paris,
                                     clock: simulation.clock, delay: delay)
            client = MediaClient(transport: link, clock: simulation.clock, executor: simulation.executor)
            let client = self.client, outputs = self.outputs, ran = self.ran
            outputs.value = []
            simulation.spawn { try await client.run(); ran.value = true }
            simulation.spawn { for await output in client.events { outputs.value!.append(output) } }
            link.connect(mtu: mtu)
            simulation.runUntilIdle()
        }

        /// Runs `body` on the simulation until it returns.
        func run<T: Sendable>(_ body: @escaping @Sendable (MediaClient) async -> T) -> T? {
            let box = Box<T>()
            let client = self.client
            simulation.spawn { box.value = await body(client) }
            simulation.runUntilIdle()
            return box.value
        }
    }

    @Test(arguments: [Duration.zero, .seconds(2)])
    func setsUpAndFollowsThePlayer(delay: Duration) throws {
        let setup = Setup(delay: delay)
        #expect(setup.run { await $0.isReady } == true)
        let playing = try #require(setup.run { await $0.nowPlaying })
        #expect(playing.title == "Bohemian Rhapsody")
        #expect(playing.playback?.state == .playing)
        #expect(setup.run { await $0.phoneTime?.hour } == 14)
        #expect(setup.run { await $0.localTimeInformation } == Self.paris)
        // The phone changes track: the accessory hears it.
        setup.link.updatePlayer { $0.index = 1 }
        setup.simulation.runUntilIdle()
        #expect(setup.run { await $0.nowPlaying.title } == "We Will Rock You")
        #expect(setup.link.mostOperationsInFlight == 1)
        let outputs = setup.outputs.value ?? []
        #expect(outputs.contains(.ams(.ready)))
        #expect(outputs.contains(.cts(.localTimeInformation(Self.paris))))
    }

    @Test(arguments: [Duration.zero, .seconds(2)])
    func commandsQueueAndEachEndsOnce(delay: Duration) {
        let setup = Setup(delay: delay, player: MediaPlayer(tracks: Self.tracks, supportedCommands: [.play, .pause, .nextTrack]))
        let results = setup.run { client in
            await withTaskGroup(of: AMSClientError?.self) { group in
                for command in [RemoteCommandID.play, .nextTrack, .pause, .skipForward] {
                    group.addTask { await client.perform(command) }
                }
                var results: [AMSClientError?] = []
                for await result in group { results.append(result) }
                return results
            }
        }
        #expect(results?.count == 4)
        #expect(results?.filter { $0 == nil }.count == 3)
        #expect(results?.contains(.unsupported) == true)  // skipForward: not written
        #expect(Set(setup.link.commands) == [.play, .nextTrack, .pause])
        #expect(setup.link.mostOperationsInFlight == 1)
        #expect(setup.run { await $0.nowPlaying.title } == "We Will Rock You")
    }

    @Test func aLinkThatDropsMidCommandEndsItAndComesBack() {
        let setup = Setup(delay: .seconds(2))
        let result = Box<AMSClientError?>()
        let client = setup.client
        setup.simulation.spawn { result.value = await client.perform(.pause) }
        setup.simulation.run(for: .seconds(1))
        setup.link.drop()
        setup.simulation.runUntilIdle()
        #expect(result.value == .some(.sessionEnded))
        setup.link.connect()
        setup.simulation.runUntilIdle()
        #expect(setup.run { await $0.isReady } == true)
        #expect(setup.run { await $0.perform(.pause) } == .some(nil))
        #expect(setup.link.player.state == .paused)
    }

    @Test func aWriteNeverAnsweredTimesOutAndTheNextWaitsForTheLink() {
        let setup = Setup(delay: .zero)
        setup.link.neverAnswerNextWrite()
        let start = setup.simulation.now
        let client = setup.client
        let first = Box<AMSClientError?>()
        let second = Box<AMSClientError?>()
        setup.simulation.spawn { first.value = await client.perform(.pause) }
        setup.simulation.spawn { second.value = await client.perform(.play) }
        setup.simulation.run(for: .seconds(11))
        #expect(first.value == .some(.timedOut))
        #expect(second.value == nil)  // waits: the first may still be answered
        #expect(setup.simulation.now >= start + .seconds(10))
        // The phone never answers: the link drops (as ATT's 30 s would end it).
        setup.link.drop()
        setup.simulation.runUntilIdle()
        #expect(second.value == .some(.sessionEnded))
        #expect(setup.link.mostOperationsInFlight == 1)
    }

    @Test func aCommandOfAnEndedLinkNeverReachesTheNextOne() {
        // The transport is stuck on a write the phone never answers; the
        // engine gives it up (10 s) and, after ATT's 30 s, hands the next
        // command to the worker, which is still waiting on the transport.
        let setup = Setup(delay: .zero)
        setup.link.neverAnswerNextWrite()
        let client = setup.client
        let first = Box<AMSClientError?>()
        let second = Box<AMSClientError?>()
        setup.simulation.spawn { first.value = await client.perform(.pause) }
        setup.simulation.spawn { second.value = await client.perform(.nextTrack) }
        setup.simulation.run(for: .seconds(31))
        #expect(first.value == .some(.timedOut))
        // The link drops and comes back at once: nextTrack belongs to the
        // ended link, so it is not written on the new one.
        setup.link.drop()
        setup.link.connect()
        setup.simulation.runUntilIdle()
        #expect(second.value == .some(.sessionEnded))
        #expect(setup.link.commands.isEmpty, "written: \(setup.link.commands)")
        #expect(setup.link.player.index == 0)
        #expect(setup.run { await $0.isReady } == true)
        #expect(setup.run { await $0.perform(.nextTrack) } == .some(nil))
        #expect(setup.link.commands == [.nextTrack])
    }

    @Test func amsRemovedAndBack() {
        let setup = Setup(delay: .milliseconds(50))
        setup.link.setAMSPublished(false)
        setup.simulation.runUntilIdle()
        #expect(setup.run { await $0.isReady } == false)
        #expect(setup.run { await $0.nowPlaying.isEmpty } == true)
        #expect(setup.run { await $0.perform(.play) } == .some(.notReady))
        #expect(setup.run { await $0.phoneTime?.hour } == 14)  // CTS stays
        setup.link.setAMSPublished(true)
        setup.simulation.runUntilIdle()
        #expect(setup.run { await $0.isReady } == true)
        #expect(setup.run { await $0.nowPlaying.title } == "Bohemian Rhapsody")
        #expect(setup.outputs.value?.contains(.ams(.ended(.serviceUnpublished))) == true)
    }

    @Test func theRunEndingEndsTheCommandsWaiting() {
        let setup = Setup(delay: .seconds(5))
        let client = setup.client
        let result = Box<AMSClientError?>()
        setup.simulation.spawn { result.value = await client.perform(.pause) }
        setup.simulation.run(for: .seconds(1))
        setup.link.close()
        setup.simulation.runUntilIdle()
        #expect(result.value == .some(.sessionEnded))
        #expect(setup.outputs.value?.contains(.ams(.ended(.linkDown))) == true)
        #expect(setup.run { await $0.link } == .some(nil))
    }

    @Test(arguments: [Duration.zero, .seconds(2)])
    func stopTurnsEveryNotificationOffThenRunReturns(delay: Duration) {
        let setup = Setup(delay: delay)
        #expect(setup.link.subscriptions == [.ams(.remoteCommand), .ams(.entityUpdate), .cts(.currentTime)])
        let client = setup.client
        let result = Box<AMSClientError?>()
        setup.simulation.spawn { result.value = await client.perform(.pause) }
        // Stopped with the command on the air (on the slow link): it ends, the CCCDs are written off after it.
        setup.simulation.run(for: .milliseconds(500))
        setup.simulation.spawn {
            await client.stop()
            await client.stop()  // a second stop changes nothing
        }
        setup.simulation.runUntilIdle()
        #expect(setup.link.subscriptions.isEmpty)
        // Done before the stop on the quick link; on the slow one still on the air, so ended by it.
        #expect(result.value == (delay == .zero ? .some(nil) : .some(.sessionEnded)))
        #expect(setup.outputs.value?.contains(.ams(.ended(.stopped))) == true)
        #expect(setup.link.mostOperationsInFlight == 1)
        // run() returned: the client's events finished, and a command now ends at once.
        #expect(setup.ran.value == true)
        #expect(setup.run { await $0.perform(.play) } == .some(.notReady))
    }

    @Test(arguments: [Duration.zero, .seconds(2)])
    func anAnswerAndTheLinksEndTogetherKeepTheirOrder(delay: Duration) {
        // The phone answers the command and the link drops at once: the answer came first,
        // so the command was performed (not ended by the session).
        let setup = Setup(delay: delay)
        setup.link.dropAfterNextAnswer()
        #expect(setup.run { await $0.perform(.pause) } == .some(nil))
        #expect(setup.link.commands == [.pause])
        #expect(setup.outputs.value?.contains(.ams(.ended(.linkDown))) == true)
        #expect(setup.run { await $0.link } == .some(nil))
    }

    @Test func thePhonesClockNotifiedAndItsZoneReadAgain() {
        let setup = Setup(delay: .zero)
        var moved = Self.saturday
        moved.hour = 8
        setup.link.setTime(moved, zone: LocalTimeInformation(timeZone: -20, dstOffset: 0))
        setup.simulation.runUntilIdle()
        #expect(setup.run { await $0.phoneTime?.hour } == 8)
        #expect(setup.run { await $0.localTimeInformation?.utcOffsetMinutes } == -300)
    }
}
