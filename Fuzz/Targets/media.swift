// The AMS and CTS decoders, and the AMS and CTS clients (our accessory)
// fed by a hostile or broken phone. The input, repeated: an op byte
// (op % 12) and its operands; `chunk` is a length byte, then that many bytes.
//
//    0 EntityUpdate.decode(chunk)        1 RemoteCommandList / RemoteCommandID.decode(write:) (chunk)
//    2 EntityUpdate.fitting(chunk, mtu 23 + b × 2)
//    3 PlaybackInfo, MediaNumber (chunk)  4 CurrentTime.decode(chunk)   5 LocalTimeInformation.decode(chunk)
//    6 link up or down (b & 1), AMS published or not (b & 2: Service Changed)
//    7 the oldest operation answered: a subscription, write or read, with
//      success, ATT error 0xA0…0xA2 or a transport failure (b % 4); a read's
//      value is a chunk
//    8 an Entity Update notification (chunk)   9 a Remote Command notification (chunk)
//   10 perform(command b % 16)   11 tick (+ 500 ms × b), or stop (b == 255); CTS: a Current Time notification (chunk)
//
// Invariants: no trap; a decoded value encodes back to its bytes; a fitted
// Entity Update fits MTU − 3 bytes and its value is a prefix of the value,
// cut at a character's start (or to nothing, for bytes with no character
// start in reach), flagged only when cut; a PlaybackInfo read
// writes a value that reads back the same state; every command ends exactly
// once (`commandCompleted`), and all have ended once the link is down and
// the engines' time has run out; the elapsed time is never negative nor past
// the duration told.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runMedia(FuzzInput(start, count))
    return 0
}

func runMedia(_ input: FuzzInput) {
    var input = input
    var ams = AMSClient(configuration: AMSClientConfiguration(requestTimeout: .seconds(2), retryInterval: .seconds(3)))
    var cts = CTSClient(requestTimeout: .seconds(2))
    var now = Timestamp.zero
    // Operations handed to the transport and not answered yet, oldest first.
    enum Pending { case subscribe(AMSCharacteristic), write(WriteToken), read(WriteToken), ctsRead(WriteToken) }
    var pending: [Pending] = []
    var open: Set<AMSRequestID> = []
    var ended: Set<AMSRequestID> = []

    func take(_ actions: [AMSClientAction]) {
        for action in actions {
            switch action {
            case .subscribe(let characteristic): pending.append(.subscribe(characteristic))
            case .unsubscribe: break
            case .write(_, _, let token): pending.append(.write(token))
            case .read(_, let token): pending.append(.read(token))
            case .emit(.commandCompleted(let id, _)):
                check(open.remove(id) != nil, "command \(id) ended twice, or was never asked")
                ended.insert(id)
            case .emit: break
            }
        }
        if let duration = ams.nowPlaying.duration, let elapsed = ams.nowPlaying.elapsed(at: now) {
            check(elapsed >= 0 && (duration < 0 || elapsed <= max(duration, 0) + 0.001), "elapsed \(elapsed) outside 0…\(duration)")
        }
    }
    func takeTime(_ actions: [CTSClientAction]) {
        for case .read(_, let token) in actions { pending.append(.ctsRead(token)) }
    }

    while !input.isAtEnd {
        let op = input.byte() % 12
        switch op {
        case 0:
            let bytes = input.chunk()
            if let update = try? EntityUpdate.decode(bytes) {
                check(update.encode() == bytes, "an Entity Update does not encode back to its bytes")
            } else {
                check(bytes.count < 3, "an Entity Update of \(bytes.count) bytes refused")
            }
        case 1:
            let bytes = input.chunk()
            check(RemoteCommandList.encode(RemoteCommandList.decode(bytes)) == bytes, "a Remote Command list does not encode back")
            if let command = try? RemoteCommandID.decode(write: bytes) {
                check(bytes == [command.rawValue], "a Remote Command write decoded from \(bytes.count) bytes")
            }
        case 2:
            let mtu = 23 + Int(input.byte()) * 2
            let bytes = input.chunk()
            let update = EntityUpdate.fitting(.title, AttributeValue(bytes: bytes), mtu: mtu)
            let value = update.value.withBytes { Array($0) }
            check(update.encode().count <= min(mtu, 517) - 3, "a fitted Entity Update of \(update.encode().count) bytes at MTU \(mtu)")
            check(Array(bytes.prefix(value.count)) == value, "a fitted value is not a prefix of the value")
            check(update.isTruncated == (value.count < bytes.count), "the truncated flag does not say whether the value was cut")
            // Cut at a character's start; bytes with none in reach (not UTF-8) are cut to nothing.
            if value.count < bytes.count && !value.isEmpty { check(bytes[value.count] & 0xC0 != 0x80, "a value cut inside a character") }
        case 3:
            let bytes = input.chunk()
            if let info = PlaybackInfo(AttributeValue(bytes: bytes)) {
                let again = PlaybackInfo(info.value)
                check(again?.state == info.state, "a PlaybackInfo does not read back its state")
            }
            _ = MediaNumber.integer(bytes)
            _ = MediaNumber.decimal(bytes)
        case 4:
            let bytes = input.chunk()
            if let time = try? CurrentTime.decode(bytes) {
                check(time.encode() == bytes, "a Current Time does not encode back to its bytes")
                _ = time.adding(seconds: Int64(input.uint16()) * 3600)
            }
        case 5:
            let bytes = input.chunk()
            if let zone = try? LocalTimeInformation.decode(bytes) {
                check(zone.encode() == bytes, "a Local Time Information does not encode back to its bytes")
                _ = zone.utcOffsetMinutes
            }
        case 6:
            let b = input.byte()
            if b & 2 != 0 {
                take(ams.serviceChanged(published: b & 1 == 1, at: now))
            } else if b & 1 == 1 {
                take(ams.linkUp(at: now))
                takeTime(cts.linkUp(at: now))
            } else {
                take(ams.linkDown(at: now))
                takeTime(cts.linkDown(at: now))
                // The transport ends what was on the air with a failure, as the runtime's do.
                let failed = pending
                pending = []
                for operation in failed {
                    switch operation {
                    case .subscribe(let characteristic): take(ams.subscriptionCompleted(characteristic, .transportFailure, at: now))
                    case .write(let token): take(ams.writeCompleted(token, .transportFailure, at: now))
                    case .read(let token): take(ams.readCompleted(token, .transportFailure, at: now))
                    case .ctsRead(let token): takeTime(cts.readCompleted(token, .transportFailure, at: now))
                    }
                }
            }
        case 7:
            let b = input.byte()
            guard !pending.isEmpty else { continue }
            let operation = pending.removeFirst()
            let result: ATTResult = switch b % 4 {
            case 0: .success
            case 1: .attError(ATTErrorCode(0xA0 + b / 4 % 3))
            case 2: .attError(0x0E)
            default: .transportFailure
            }
            let read: ATTReadResult = switch result {
            case .success: .value(input.chunk())
            case .attError(let code): .attError(code)
            case .transportFailure: .transportFailure
            }
            switch operation {
            case .subscribe(let characteristic): take(ams.subscriptionCompleted(characteristic, result, at: now))
            case .write(let token): take(ams.writeCompleted(token, result, at: now))
            case .read(let token): take(ams.readCompleted(token, read, at: now))
            case .ctsRead(let token): takeTime(cts.readCompleted(token, read, at: now))
            }
        case 8:
            take(ams.received(entityUpdate: input.chunk(), at: now))
        case 9:
            take(ams.received(remoteCommand: input.chunk(), at: now))
        case 10:
            let request = ams.perform(RemoteCommandID(rawValue: input.byte() % 16), at: now)
            open.insert(request.id)
            take(request.actions)
        default:
            let b = input.byte()
            if b == 255 {
                take(ams.stop(at: now))
            } else if b >= 128 {
                takeTime(cts.received(currentTime: input.chunk(), at: now))
            } else {
                now = now.adding(nanoseconds: Int64(b) * 500_000_000)
                take(ams.tick(at: now))
                takeTime(cts.tick(at: now))
            }
        }
    }
    // The link goes; after the engines' time runs out, every command has ended.
    take(ams.linkDown(at: now))
    takeTime(cts.linkDown(at: now))
    for _ in 0..<4 {
        now = now.adding(nanoseconds: 60_000_000_000)
        take(ams.tick(at: now))
        takeTime(cts.tick(at: now))
    }
    check(open.isEmpty, "\(open.count) commands never ended")
}
