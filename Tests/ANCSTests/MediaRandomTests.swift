// The AMS and CTS clients against a hostile phone, at random (seeded, so a
// failure names its seed): notifications of any bytes, any answer or none
// to each operation, answers late or twice, the link and the service
// coming and going, commands at any time. What must hold whatever happens:
// nothing traps; every command ends exactly once; an engine never has two
// operations outstanding unless ATT's own 30 s have passed since the older
// one; its queue stays bounded; a value kept is never longer than the
// notification it came in or `maximumValueLength`.

import Testing
@testable import ANCS

@Suite struct MediaRandomTests {
    @Test func amsClientAgainstAHostilePhone() {
        // Most runs must get past the set-up, or the commands' paths go untested.
        let ready = (1...120).map { amsRun(seed: $0) }
        // (86 of 120 reach it, 136 sessions in all, with the mix below.)
        #expect(ready.count { $0 > 0 } >= 72, "runs that reached .ready: \(ready.count { $0 > 0 }) of 120")
    }

    /// One run; returns how many sessions reached `.ready`.
    func amsRun(seed: UInt64) -> Int {
        var random = SplitMix64(seed: seed)
        let configuration = AMSClientConfiguration(maximumValueLength: 64, maximumQueuedCommands: 4)
        var client = AMSClient(configuration: configuration)
        var now = Timestamp.zero
        /// Operations the client handed out and the harness has not answered: token → when issued.
        var outstanding: [(token: WriteToken, isRead: Bool, issued: Timestamp)] = []
        var answered: [(WriteToken, Bool)] = []  // kept to answer again, late or twice
        var completions: [AMSRequestID: Int] = [:]
        var asked: Set<AMSRequestID> = []
        var subscriptions: [AMSCharacteristic] = []
        var ready = 0

        func take(_ actions: [AMSClientAction]) {
            for action in actions {
                switch action {
                case .write(_, _, let token), .read(_, let token):
                    // At most one outstanding, unless the older one is past ATT's 30 s.
                    for older in outstanding {
                        #expect(now >= older.issued + .seconds(30), "seed \(seed): a second operation while \(older.token) is outstanding")
                    }
                    outstanding.append((token, { if case .read = action { true } else { false } }(), now))
                case .subscribe(let characteristic):
                    subscriptions.append(characteristic)
                case .emit(.ready):
                    ready += 1
                case .emit(.commandCompleted(let id, _)):
                    completions[id, default: 0] += 1
                case .emit(.updated(_, let value, _)):
                    #expect(value.count <= 512, "seed \(seed): a value of \(value.count) bytes")
                default: break
                }
            }
        }

        func anyResult() -> ATTResult {
            switch random.int(0...19) {
            case 0...15: .success
            case 3: .transportFailure
            default: .attError(ATTErrorCode(UInt8(random.int(0...255))))
            }
        }

        take(client.linkUp(at: now))
        for _ in 0..<400 {
            switch random.int(0...15) {
            case 0, 1, 14, 15:
                // Answer the oldest outstanding operation (or an old one again).
                if !outstanding.isEmpty && random.int(0...4) > 0 {
                    let op = outstanding.removeFirst()
                    answered.append((op.token, op.isRead))
                    if op.isRead {
                        let result: ATTReadResult = random.int(0...3) == 0 ? .attError(ATTErrorCode(UInt8(random.int(0xA0...0xA2))))
                            : .value((0..<random.int(0...200)).map { _ in UInt8(random.int(0...255)) })
                        take(client.readCompleted(op.token, result, at: now))
                    } else {
                        take(client.writeCompleted(op.token, anyResult(), at: now))
                    }
                } else if let old = answered.randomElement(using: &random) {
                    take(old.1 ? client.readCompleted(old.0, .value([1, 2]), at: now) : client.writeCompleted(old.0, .success, at: now))
                }
            case 2:
                // The oldest CCCD write answered (or, now and then, one never written).
                let characteristic = subscriptions.isEmpty || random.int(0...9) == 0
                    ? (random.int(0...1) == 0 ? AMSCharacteristic.remoteCommand : .entityUpdate) : subscriptions.removeFirst()
                take(client.subscriptionCompleted(characteristic, anyResult(), at: now))
            case 3, 4:
                var bytes: [UInt8] = [UInt8(random.int(0...3)), UInt8(random.int(0...4)), UInt8(random.int(0...3))]
                bytes += (0..<random.int(0...30)).map { _ in UInt8(random.int(0x20...0xFF)) }
                take(client.received(entityUpdate: Array(bytes.prefix(random.int(0...bytes.count))), at: now))
            case 5:
                take(client.received(remoteCommand: (0..<random.int(0...20)).map { _ in UInt8(random.int(0...15)) }, at: now))
            case 6, 7:
                let request = client.perform(RemoteCommandID(rawValue: UInt8(random.int(0...15))), at: now)
                asked.insert(request.id)
                take(request.actions)
            case 8:
                now = now + .milliseconds(Int64(random.int(0...(random.int(0...2) == 0 ? 40_000 : 3_000))))
                take(client.tick(at: now))
            case 9:
                now = now + .seconds(1)
                take(client.tick(at: now))
            case 10 where random.int(0...2) == 0:
                take(client.serviceChanged(published: random.int(0...3) > 0, at: now))
            case 11 where random.int(0...4) == 0:
                take(client.linkDown(at: now))
                outstanding = []  // the stack fails them; their answers never come
                subscriptions = []
                take(client.linkUp(at: now))
            case 12 where random.int(0...4) == 0:
                take(client.stop(at: now))  // its operation on the air stays outstanding
                subscriptions = []
                take(client.linkUp(at: now))
            default:
                now = now + .milliseconds(Int64(random.int(0...3000)))
                take(client.tick(at: now))
            }
            #expect(client.queue.count <= configuration.maximumQueuedCommands + configuration.registrations.count + 2 * MediaAttribute.all.count,
                    "seed \(seed): queue of \(client.queue.count)")
            for value in [client.nowPlaying.title, client.nowPlaying.artist, client.nowPlaying.album, client.nowPlaying.playerName] {
                #expect((value?.count ?? 0) <= 512)
            }
            if client.inFlight != nil { #expect(client.nextDeadline != nil) }
        }
        take(client.linkDown(at: now))
        for id in asked { #expect(completions[id] == 1, "seed \(seed): command \(id) ended \(completions[id] ?? 0) times") }
        #expect(completions.keys.allSatisfy { asked.contains($0) })
        return ready
    }

    @Test(arguments: 1...60)
    func ctsClientAgainstAHostilePhone(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var client = CTSClient()
        var now = Timestamp.zero
        var outstanding: [(token: WriteToken, issued: Timestamp)] = []
        func take(_ actions: [CTSClientAction]) {
            for case .read(_, let token) in actions {
                for older in outstanding { #expect(now >= older.issued + .seconds(30), "seed \(seed): two reads outstanding") }
                outstanding.append((token, now))
            }
        }
        take(client.linkUp(at: now))
        for _ in 0..<300 {
            switch random.int(0...6) {
            case 0, 1:
                guard !outstanding.isEmpty else { continue }
                let op = outstanding.removeFirst()
                let result: ATTReadResult = random.int(0...3) == 0 ? .transportFailure
                    : .value((0..<random.int(0...12)).map { _ in UInt8(random.int(0...255)) })
                take(client.readCompleted(op.token, result, at: now))
            case 2:
                var time = CurrentTime(year: 2026, month: 11, day: 28, hour: 14, minute: 0, second: 0).encode()
                time[9] = UInt8(random.int(0...15))
                take(client.received(currentTime: random.int(0...2) == 0 ? Array(time.prefix(random.int(0...10))) : time, at: now))
            case 3:
                now = now + .milliseconds(Int64(random.int(0...40_000)))
                take(client.tick(at: now))
            case 4:
                take(client.linkDown(at: now))
                outstanding = []
                take(client.linkUp(at: now))
            default:
                now = now + .seconds(1)
                take(client.tick(at: now))
            }
            #expect(client.queue.count <= 2)
            if let time = client.phoneTime(at: now + .seconds(86_400 * 400)) {
                #expect((1...12).contains(time.month) && (1...31).contains(time.day) && time.hour < 24)
            }
        }
    }
}
