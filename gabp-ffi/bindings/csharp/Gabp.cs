// Gabp.cs: C# bindings of gabp-rs's C ABI (libgabp, the gabp-ffi crate), for Unity (Mono and IL2CPP) and any
// .NET or Mono program. Copy this one file into Assets/ and libgabp (gabp.dll, libgabp.so, libgabp.dylib) into a
// Plugins folder. P/Invoke only; no unsafe code. C# 7.2 (what Mono's mcs takes).
// SPDX-License-Identifier: Apache-2.0
//
//   var mod = new Gabp.ModServer("my-game", "1.0.0")
//       .Tool("demo/echo", "Answers its arguments", args => args)                  // JSON in, JSON out
//       .MainThreadTool("world/get_block", "The block at a position", args => ...)  // runs inside Pump()
//       .Channel("player/move");
//   mod.Start();                 // GABS environment, bridge.json, or a free loopback port
//   void Update() { mod.Pump(); }
//   mod.Publish("player/move", "{\"x\":1}");
//
// A tool's handler gets its arguments as JSON text (checked against its input schema) and returns its result as
// JSON text; Gabp.Json reads and writes JSON without other assemblies. An exception in a handler answers the call
// as a tool error with its message (GabpToolException carries a GABP error code). An async tool gets a ToolCall to
// answer later, from any thread.
//
// A test harness drives a mod with Gabp.Bridge:
//
//   using (var bridge = Gabp.Bridge.Connect("tcp://127.0.0.1:4545", token))   // or Gabp.Bridge.Discover()
//   using (bridge.Subscribe("player/move", e => Console.WriteLine(e.PayloadJson)))
//       Console.WriteLine(bridge.Call("demo/echo", "{\"value\":1}", TimeSpan.FromSeconds(2)));
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Runtime.InteropServices;
using System.Text;

#if !UNITY_5_3_OR_NEWER
namespace AOT
{
    /// <summary>Marks the static methods native code calls back, for IL2CPP (Unity has its own).</summary>
    [AttributeUsage(AttributeTargets.Method)]
    public sealed class MonoPInvokeCallbackAttribute : Attribute
    {
        public MonoPInvokeCallbackAttribute(Type type) { }
    }
}
#endif

namespace Gabp
{
    /// <summary>What a call into libgabp returned (GabpStatus in gabp.h).</summary>
    public enum Status
    {
        Ok = 0, Null = 1, Utf8 = 2, Json = 3, Schema = 4, Handle = 5, CallEnded = 6, State = 7, Invalid = 8,
        Io = 9, Timeout = 10, Remote = 11, Internal = 12,
    }

    /// <summary>A call into libgabp failed: its status and the library's message.</summary>
    public class GabpException : Exception
    {
        public Status Status { get; private set; }
        public GabpException(Status status, string message) : base(message) { Status = status; }
    }

    /// <summary>The mod answered a bridge's call with a GABP error: its code, message, and error object as JSON.</summary>
    public class GabpRemoteException : GabpException
    {
        public long Code { get; private set; }
        public string ErrorJson { get; private set; }
        public GabpRemoteException(long code, string message, string errorJson) : base(Status.Remote, message)
        {
            Code = code;
            ErrorJson = errorJson;
        }
    }

    /// <summary>Thrown in a tool's handler to fail the call with a GABP error code (0: the tool-failure code).</summary>
    public class GabpToolException : Exception
    {
        public int Code { get; private set; }
        public GabpToolException(string message, int code = 0) : base(message) { Code = code; }
    }

    /// <summary>How serious an attention entry is (GabpSeverity in gabp.h).</summary>
    public enum Severity { Info = 0, Warning = 1, Error = 2, Fatal = 3 }

    /// <summary>Flags of a tool.</summary>
    [Flags]
    public enum ToolFlags : uint { None = 0, ReadOnly = 1, MainThread = 2 }

    internal static class Native
    {
        const string Lib = "gabp";
        public const uint AbiVersion = 1;

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        public delegate void ToolFn(IntPtr user, ulong call, IntPtr args, UIntPtr argsLen);
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        public delegate void ResourceFn(IntPtr user, ulong call);
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        public delegate void EventFn(IntPtr user, IntPtr evt);

        [StructLayout(LayoutKind.Sequential)]
        public struct GabpEvent
        {
            public IntPtr Channel; public UIntPtr ChannelLen; public ulong Seq;
            public IntPtr Payload; public UIntPtr PayloadLen; public ulong Missed;
        }

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern uint gabp_abi_version();
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern IntPtr gabp_last_error(out UIntPtr len);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status gabp_mod_new(byte[] app, UIntPtr appLen, byte[] version, UIntPtr versionLen, out ulong mod);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status gabp_mod_add_tool(ulong mod, byte[] name, UIntPtr nameLen, byte[] description,
            UIntPtr descriptionLen, byte[] schema, UIntPtr schemaLen, uint flags, ToolFn callback, IntPtr user);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status gabp_mod_add_channel(ulong mod, byte[] channel, UIntPtr channelLen);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_mod_enable_time_control(ulong mod);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_mod_start(ulong mod);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_mod_enable_attention(ulong mod);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status gabp_attention_open(ulong mod, int severity, byte[] message, UIntPtr messageLen, [MarshalAs(UnmanagedType.U1)] bool blocking, out GabpString attentionId);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_attention_resolve(ulong mod);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_mod_endpoint(ulong mod, out GabpString endpoint);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern void gabp_string_free(ref GabpString s);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status gabp_mod_publish(ulong mod, byte[] channel, UIntPtr channelLen, byte[] payload, UIntPtr payloadLen, out ulong seq);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_mod_pump(ulong mod, ulong budgetUs, out uint ran);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_mod_wait(ulong mod, ulong timeoutUs, [MarshalAs(UnmanagedType.U1)] out bool work);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_mod_wake(ulong mod);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_mod_tick(ulong mod, [MarshalAs(UnmanagedType.U1)] out bool runTick);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_mod_stop(ulong mod);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_mod_free(ulong mod);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_call_reply(ulong call, byte[] json, UIntPtr jsonLen);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status gabp_call_reply_content(ulong call, byte[] json, UIntPtr jsonLen, byte[] mime, UIntPtr mimeLen, byte[] data, UIntPtr dataLen);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_call_fail(ulong call, int code, byte[] message, UIntPtr messageLen);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_call_is_cancelled(ulong call, [MarshalAs(UnmanagedType.U1)] out bool cancelled);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status gabp_call_progress(ulong call, double done, double total, byte[] message, UIntPtr messageLen);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status gabp_mod_add_resource(ulong mod, byte[] uri, UIntPtr uriLen, byte[] name, UIntPtr nameLen,
            byte[] description, UIntPtr descriptionLen, byte[] mime, UIntPtr mimeLen, uint flags, ResourceFn callback, IntPtr user);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_call_reply_resource(ulong call, byte[] data, UIntPtr dataLen);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status gabp_bridge_connect(byte[] endpoint, UIntPtr endpointLen, byte[] token, UIntPtr tokenLen, out ulong bridge);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_bridge_discover(byte[] path, UIntPtr pathLen, out ulong bridge);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status gabp_bridge_call(ulong bridge, byte[] tool, UIntPtr toolLen, byte[] args, UIntPtr argsLen, ulong timeoutMs, out GabpString answer);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status gabp_bridge_subscribe(ulong bridge, byte[] channel, UIntPtr channelLen, EventFn callback, IntPtr user, out ulong subscription);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_subscription_free(ulong subscription);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] public static extern Status gabp_bridge_close(ulong bridge);

        [StructLayout(LayoutKind.Sequential)]
        public struct GabpString { public IntPtr Ptr; public UIntPtr Len; }

        public static byte[] Utf8(string s) { return Encoding.UTF8.GetBytes(s ?? ""); }
        public static UIntPtr Len(byte[] b) { return new UIntPtr((uint)b.Length); }

        public static string Text(IntPtr ptr, UIntPtr len)
        {
            int n = checked((int)len.ToUInt64());
            if (ptr == IntPtr.Zero || n == 0) return "";
            var bytes = new byte[n];
            Marshal.Copy(ptr, bytes, 0, n);
            return Encoding.UTF8.GetString(bytes);
        }

        public static string LastError()
        {
            UIntPtr len;
            IntPtr ptr = gabp_last_error(out len);
            return Text(ptr, len);
        }

        public static void Check(Status status)
        {
            if (status != Status.Ok) throw new GabpException(status, LastError());
        }

        public static void CheckAbi()
        {
            if (gabp_abi_version() != AbiVersion)
                throw new GabpException(Status.State, "libgabp's ABI version " + gabp_abi_version() + " is not " + AbiVersion + ", which Gabp.cs was written for");
        }

        /// <summary>The text of a string the library gave out, which is freed.</summary>
        public static string Take(ref GabpString s)
        {
            try { return Text(s.Ptr, s.Len); } finally { gabp_string_free(ref s); }
        }
    }

    /// <summary>A call of an async tool, answered once, now or later, from any thread.</summary>
    public sealed class ToolCall
    {
        readonly ulong handle;
        /// <summary>The call's arguments, as JSON text.</summary>
        public string Arguments { get; private set; }
        internal ToolCall(ulong handle, string arguments) { this.handle = handle; Arguments = arguments; }

        // Each answer returns false when the call had already ended (the bridge cancelled it or it timed out while
        // the work ran, or it was answered before): nobody waits for this answer then. Other mistakes throw.

        /// <summary>Answers with a JSON result; false when the call had already ended.</summary>
        public bool Reply(string json) { var b = Native.Utf8(json); return Answered(Native.gabp_call_reply(handle, b, Native.Len(b))); }

        /// <summary>Answers with a JSON result and a picture or sound (mime such as "image/png"); false when the
        /// call had already ended.</summary>
        public bool ReplyWithContent(string json, string mime, byte[] data)
        {
            var j = Native.Utf8(json);
            var m = Native.Utf8(mime);
            data = data ?? new byte[0];
            return Answered(Native.gabp_call_reply_content(handle, j, Native.Len(j), m, Native.Len(m), data, Native.Len(data)));
        }

        /// <summary>Fails the call with a GABP error code (0: the tool-failure code) and a message; false when the
        /// call had already ended.</summary>
        public bool Fail(string message, int code = 0) { var b = Native.Utf8(message); return Answered(Native.gabp_call_fail(handle, code, b, Native.Len(b))); }

        static bool Answered(Status status)
        {
            if (status == Status.CallEnded) return false;
            Native.Check(status);
            return true;
        }

        /// <summary>Whether nobody waits for the answer any more (cancelled, timed out): stop the work.</summary>
        public bool IsCancelled { get { bool c; Native.Check(Native.gabp_call_is_cancelled(handle, out c)); return c; } }

        /// <summary>Reports progress (total below 0 when unknown); sent when the bridge asked for it. Nothing
        /// happens once the call has ended (cancelled, timed out).</summary>
        public void Progress(double done, double total = -1, string message = null)
        {
            var b = Native.Utf8(message);
            var status = Native.gabp_call_progress(handle, done, total, b, Native.Len(b));
            if (status != Status.CallEnded) Native.Check(status);
        }
    }

    /// <summary>A GABP mod: tools, channels and events, served by libgabp.</summary>
    public sealed class ModServer : IDisposable
    {
        ulong handle;
        // The handlers native code calls back through, kept alive (and found) by these GC handles.
        readonly List<GCHandle> handlers = new List<GCHandle>();
        static readonly Native.ToolFn Callback = OnCall;
        static readonly Native.ResourceFn ReadCallback = OnRead;

        public ModServer(string app, string version)
        {
            Native.CheckAbi();
            var a = Native.Utf8(app);
            var v = Native.Utf8(version);
            Native.Check(Native.gabp_mod_new(a, Native.Len(a), v, Native.Len(v), out handle));
        }

        /// <summary>A tool answered by <paramref name="handler"/> on a library thread: JSON arguments in, JSON result out.</summary>
        public ModServer Tool(string name, string description, Func<string, string> handler, string inputSchema = "", ToolFlags flags = ToolFlags.None)
        {
            return Add(name, description, inputSchema, flags & ~ToolFlags.MainThread, handler);
        }

        /// <summary>A tool that runs on the game's thread, inside <see cref="Pump"/>.</summary>
        public ModServer MainThreadTool(string name, string description, Func<string, string> handler, string inputSchema = "", ToolFlags flags = ToolFlags.None)
        {
            return Add(name, description, inputSchema, flags | ToolFlags.MainThread, handler);
        }

        /// <summary>A tool whose handler answers the <see cref="ToolCall"/> now or later, from any thread.</summary>
        public ModServer AsyncTool(string name, string description, Action<ToolCall> handler, string inputSchema = "", ToolFlags flags = ToolFlags.None)
        {
            return Add(name, description, inputSchema, flags & ~ToolFlags.MainThread, handler);
        }

        ModServer Add(string name, string description, string inputSchema, ToolFlags flags, object handler)
        {
            if (handler == null) throw new ArgumentNullException("handler");
            var gc = GCHandle.Alloc(handler);
            var n = Native.Utf8(name);
            var d = Native.Utf8(description);
            var s = Native.Utf8(inputSchema);
            var status = Native.gabp_mod_add_tool(handle, n, Native.Len(n), d, Native.Len(d), s, Native.Len(s), (uint)flags, Callback, GCHandle.ToIntPtr(gc));
            if (status != Status.Ok) { gc.Free(); Native.Check(status); }
            handlers.Add(gc);
            return this;
        }

        [AOT.MonoPInvokeCallback(typeof(Native.ToolFn))]
        static void OnCall(IntPtr user, ulong call, IntPtr args, UIntPtr argsLen)
        {
            try
            {
                var handler = GCHandle.FromIntPtr(user).Target;
                var toolCall = new ToolCall(call, Native.Text(args, argsLen));
                var async = handler as Action<ToolCall>;
                if (async != null) { async(toolCall); return; }
                toolCall.Reply(((Func<string, string>)handler)(toolCall.Arguments));
            }
            catch (GabpToolException e) { Fail(call, e.Code, e.Message); }
            catch (Exception e) { Fail(call, 0, e.GetType().Name + ": " + e.Message); }
        }

        static void Fail(ulong call, int code, string message)
        {
            var b = Native.Utf8(message);
            Native.gabp_call_fail(call, code, b, Native.Len(b)); // CallEnded when already answered: nothing to do.
        }

        /// <summary>A text resource (such as gabp://game/world) whose content <paramref name="read"/> gives on each
        /// resources/read, on a library thread; an exception fails the read with its message.</summary>
        public ModServer Resource(string uri, string name, Func<string> read, string description = "", string mimeType = "")
        {
            return AddResource(uri, name, description, mimeType, 0, read);
        }

        /// <summary>A binary resource (an icon, a save file), sent base64-encoded.</summary>
        public ModServer BinaryResource(string uri, string name, Func<byte[]> read, string description = "", string mimeType = "")
        {
            return AddResource(uri, name, description, mimeType, 1, read);
        }

        ModServer AddResource(string uri, string name, string description, string mimeType, uint flags, object read)
        {
            if (read == null) throw new ArgumentNullException("read");
            var gc = GCHandle.Alloc(read);
            var u = Native.Utf8(uri);
            var n = Native.Utf8(name);
            var d = Native.Utf8(description);
            var m = Native.Utf8(mimeType);
            var status = Native.gabp_mod_add_resource(handle, u, Native.Len(u), n, Native.Len(n), d, Native.Len(d), m, Native.Len(m), flags, ReadCallback, GCHandle.ToIntPtr(gc));
            if (status != Status.Ok) { gc.Free(); Native.Check(status); }
            handlers.Add(gc);
            return this;
        }

        [AOT.MonoPInvokeCallback(typeof(Native.ResourceFn))]
        static void OnRead(IntPtr user, ulong call)
        {
            try
            {
                var read = GCHandle.FromIntPtr(user).Target;
                var text = read as Func<string>;
                var data = text != null ? Native.Utf8(text()) : (((Func<byte[]>)read)() ?? new byte[0]);
                Native.Check(Native.gabp_call_reply_resource(call, data, Native.Len(data)));
            }
            catch (Exception e) { Fail(call, 0, e.GetType().Name + ": " + e.Message); }
        }

        /// <summary>An event channel, for <see cref="Publish"/>.</summary>
        public ModServer Channel(string name) { var b = Native.Utf8(name); Native.Check(Native.gabp_mod_add_channel(handle, b, Native.Len(b))); return this; }

        /// <summary>Turns on time control: bridges may pause, resume and step; ask <see cref="ShouldTick"/> before each tick.</summary>
        public ModServer TimeControl() { Native.Check(Native.gabp_mod_enable_time_control(handle)); return this; }

        /// <summary>Turns on attention: the mod serves attention/current and attention/ack and its channels.</summary>
        public ModServer Attention() { Native.Check(Native.gabp_mod_enable_attention(handle)); return this; }

        /// <summary>Opens (or updates) an attention item, blocking bridges' calls until acknowledged when
        /// <paramref name="blocking"/>; returns its attentionId. Any thread.</summary>
        public string OpenAttention(string message, bool blocking = true, Severity severity = Severity.Error)
        {
            var m = Native.Utf8(message);
            Native.GabpString id;
            Native.Check(Native.gabp_attention_open(handle, (int)severity, m, Native.Len(m), blocking, out id));
            return Native.Take(ref id);
        }

        /// <summary>Resolves the open attention item (its cause is gone).</summary>
        public void ResolveAttention() { Native.Check(Native.gabp_attention_resolve(handle)); }

        /// <summary>Starts serving where the GABS environment or bridge.json says, or on a free loopback port.</summary>
        public void Start() { Native.Check(Native.gabp_mod_start(handle)); }

        /// <summary>Where the mod listens (tcp://127.0.0.1:PORT).</summary>
        public string Endpoint
        {
            get
            {
                Native.GabpString s;
                Native.Check(Native.gabp_mod_endpoint(handle, out s));
                return Native.Take(ref s);
            }
        }

        /// <summary>Publishes an event with a JSON payload; returns its sequence number.</summary>
        public ulong Publish(string channel, string payloadJson)
        {
            var c = Native.Utf8(channel);
            var p = Native.Utf8(payloadJson);
            ulong seq;
            Native.Check(Native.gabp_mod_publish(handle, c, Native.Len(c), p, Native.Len(p), out seq));
            return seq;
        }

        /// <summary>Runs queued main-thread calls for at most <paramref name="budgetMicroseconds"/>; call it from Update().</summary>
        public int Pump(long budgetMicroseconds = 2000)
        {
            uint ran;
            Native.Check(Native.gabp_mod_pump(handle, (ulong)Math.Max(0, budgetMicroseconds), out ran));
            return (int)ran;
        }

        /// <summary>Blocks until a main-thread call is queued, <see cref="Wake"/> is called, or the timeout passes.</summary>
        public bool Wait(TimeSpan timeout)
        {
            bool work;
            Native.Check(Native.gabp_mod_wait(handle, (ulong)Math.Max(0, timeout.Ticks / 10), out work));
            return work;
        }

        /// <summary>Ends a <see cref="Wait"/> in progress.</summary>
        public void Wake() { Native.Check(Native.gabp_mod_wake(handle)); }

        /// <summary>With time control: whether to run the next tick (false while paused).</summary>
        public bool ShouldTick() { bool run; Native.Check(Native.gabp_mod_tick(handle, out run)); return run; }

        /// <summary>Stops serving and frees the mod.</summary>
        public void Dispose()
        {
            if (handle == 0) return;
            Native.gabp_mod_free(handle);
            handle = 0;
            foreach (var gc in handlers) gc.Free();
            handlers.Clear();
        }
    }

    /// <summary>One event a subscription receives, in seq order for its channel.</summary>
    public sealed class Event
    {
        public string Channel { get; private set; }
        public ulong Seq { get; private set; }
        /// <summary>The payload as JSON text; empty when <see cref="Missed"/> is not 0.</summary>
        public string PayloadJson { get; private set; }
        /// <summary>Not 0: this many events of the channel were lost before this notice.</summary>
        public ulong Missed { get; private set; }
        internal Event(string channel, ulong seq, string payloadJson, ulong missed)
        {
            Channel = channel; Seq = seq; PayloadJson = payloadJson; Missed = missed;
        }
    }

    /// <summary>A bridge to a running mod, for test harnesses: calls with a time limit, events through a handler.
    /// Calls may come from any thread of yours, event handlers included, but not from a mod's tool handler.</summary>
    public sealed class Bridge : IDisposable
    {
        ulong handle;
        readonly List<Subscription> subscriptions = new List<Subscription>();
        static readonly Native.EventFn EventCallback = OnEvent;

        Bridge(ulong handle) { this.handle = handle; }

        /// <summary>Connects to the mod at <paramref name="endpoint"/> (tcp://127.0.0.1:PORT) with its token.</summary>
        public static Bridge Connect(string endpoint, string token)
        {
            Native.CheckAbi();
            var e = Native.Utf8(endpoint);
            var t = Native.Utf8(token);
            ulong b;
            Native.Check(Native.gabp_bridge_connect(e, Native.Len(e), t, Native.Len(t), out b));
            return new Bridge(b);
        }

        /// <summary>Connects to the mod a bridge.json names (null: the platform path mods announce themselves at).</summary>
        public static Bridge Discover(string bridgeJsonPath = null)
        {
            Native.CheckAbi();
            var p = Native.Utf8(bridgeJsonPath);
            ulong b;
            Native.Check(Native.gabp_bridge_discover(p, Native.Len(p), out b));
            return new Bridge(b);
        }

        /// <summary>Calls <paramref name="tool"/> with JSON arguments and returns its JSON result. Throws
        /// GabpRemoteException for the mod's errors and GabpException with Status.Timeout past the time limit.</summary>
        public string Call(string tool, string argsJson = "{}", TimeSpan? timeout = null)
        {
            var t = Native.Utf8(tool);
            var a = Native.Utf8(argsJson);
            // No timeout: the library's 30 s; a negative one (Timeout.InfiniteTimeSpan): no limit.
            ulong ms = !timeout.HasValue ? 0
                : timeout.Value < TimeSpan.Zero ? ulong.MaxValue
                : (ulong)Math.Max(1, (long)timeout.Value.TotalMilliseconds);
            Native.GabpString answer;
            var status = Native.gabp_bridge_call(Handle, t, Native.Len(t), a, Native.Len(a), ms, out answer);
            if (status == Status.Ok) return Native.Take(ref answer);
            if (status != Status.Remote) throw new GabpException(status, Native.LastError());
            var message = Native.LastError();
            var error = Native.Take(ref answer);
            long code = 0;
            try
            {
                var obj = Json.Parse(error) as Dictionary<string, object>;
                object c;
                if (obj != null && obj.TryGetValue("code", out c) && c is double) code = (long)(double)c;
            }
            catch (FormatException) { }
            throw new GabpRemoteException(code, message, error);
        }

        /// <summary>Calls <paramref name="handler"/> for each event of <paramref name="channel"/>, one at a time on a
        /// thread of the subscription's own, until the returned subscription is disposed (or the bridge is).</summary>
        public Subscription Subscribe(string channel, Action<Event> handler)
        {
            if (handler == null) throw new ArgumentNullException("handler");
            var gc = GCHandle.Alloc(handler);
            var c = Native.Utf8(channel);
            ulong id;
            lock (subscriptions)
            {
                var status = Native.gabp_bridge_subscribe(Handle, c, Native.Len(c), EventCallback, GCHandle.ToIntPtr(gc), out id);
                if (status != Status.Ok) { gc.Free(); Native.Check(status); }
                var subscription = new Subscription(id, gc, this);
                subscriptions.Add(subscription);
                return subscription;
            }
        }

        [AOT.MonoPInvokeCallback(typeof(Native.EventFn))]
        static void OnEvent(IntPtr user, IntPtr evt)
        {
            try
            {
                var e = (Native.GabpEvent)Marshal.PtrToStructure(evt, typeof(Native.GabpEvent));
                var handler = (Action<Event>)GCHandle.FromIntPtr(user).Target;
                handler(new Event(Native.Text(e.Channel, e.ChannelLen), e.Seq, Native.Text(e.Payload, e.PayloadLen), e.Missed));
            }
            catch (Exception e) { Console.Error.WriteLine("Gabp: an event handler threw " + e); }
        }

        ulong Handle { get { if (handle == 0) throw new ObjectDisposedException("Gabp.Bridge"); return handle; } }

        internal void Forget(Subscription subscription) { lock (subscriptions) subscriptions.Remove(subscription); }

        /// <summary>Says goodbye to the mod, closes the connection and ends the subscriptions. Not from a mod's
        /// tool handler (InvalidOperationException): call it from a thread of your own.</summary>
        public void Dispose()
        {
            List<Subscription> ended;
            lock (subscriptions)
            {
                if (handle == 0) return;
                var status = Native.gabp_bridge_close(handle);
                if (status == Status.State) throw new InvalidOperationException(Native.LastError());
                handle = 0;
                ended = new List<Subscription>(subscriptions);
                subscriptions.Clear();
            }
            foreach (var s in ended) s.Dispose();
        }
    }

    /// <summary>A bridge's subscription to a channel; its handler is not called after Dispose returns.</summary>
    public sealed class Subscription : IDisposable
    {
        long handle;
        GCHandle handler;
        readonly Bridge bridge;
        internal Subscription(ulong handle, GCHandle handler, Bridge bridge) { this.handle = (long)handle; this.handler = handler; this.bridge = bridge; }

        public void Dispose()
        {
            long h = System.Threading.Interlocked.Exchange(ref handle, 0);
            if (h == 0) return;
            Native.gabp_subscription_free((ulong)h);
            handler.Free();
            bridge.Forget(this);
        }
    }

    /// <summary>Reads and writes JSON: objects are Dictionary&lt;string, object&gt;, arrays List&lt;object&gt;, numbers double.</summary>
    public static class Json
    {
        /// <summary>The value of JSON <paramref name="text"/>; FormatException names the offset of a mistake.</summary>
        public static object Parse(string text)
        {
            int at = 0;
            var value = Value(text, ref at, 0);
            Space(text, ref at);
            if (at != text.Length) throw new FormatException("JSON: unexpected text at offset " + at);
            return value;
        }

        /// <summary>The JSON text of <paramref name="value"/> (dictionaries, lists, arrays, strings, numbers, bools, null).</summary>
        public static string Write(object value) { var sb = new StringBuilder(); Write(sb, value); return sb.ToString(); }

        static void Space(string s, ref int at) { while (at < s.Length && (s[at] == ' ' || s[at] == '\t' || s[at] == '\n' || s[at] == '\r')) at++; }

        static object Value(string s, ref int at, int depth)
        {
            if (depth > 128) throw new FormatException("JSON: nested deeper than 128");
            Space(s, ref at);
            if (at >= s.Length) throw new FormatException("JSON: unexpected end");
            char c = s[at];
            if (c == '{')
            {
                var obj = new Dictionary<string, object>();
                at++; Space(s, ref at);
                if (at < s.Length && s[at] == '}') { at++; return obj; }
                while (true)
                {
                    Space(s, ref at);
                    if (at >= s.Length || s[at] != '"') throw new FormatException("JSON: expected a member name at offset " + at);
                    string key = Str(s, ref at);
                    Space(s, ref at);
                    if (at >= s.Length || s[at] != ':') throw new FormatException("JSON: expected ':' at offset " + at);
                    at++;
                    obj[key] = Value(s, ref at, depth + 1);
                    Space(s, ref at);
                    if (at < s.Length && s[at] == ',') { at++; continue; }
                    if (at < s.Length && s[at] == '}') { at++; return obj; }
                    throw new FormatException("JSON: expected ',' or '}' at offset " + at);
                }
            }
            if (c == '[')
            {
                var list = new List<object>();
                at++; Space(s, ref at);
                if (at < s.Length && s[at] == ']') { at++; return list; }
                while (true)
                {
                    list.Add(Value(s, ref at, depth + 1));
                    Space(s, ref at);
                    if (at < s.Length && s[at] == ',') { at++; continue; }
                    if (at < s.Length && s[at] == ']') { at++; return list; }
                    throw new FormatException("JSON: expected ',' or ']' at offset " + at);
                }
            }
            if (c == '"') return Str(s, ref at);
            if (s.Length - at >= 4 && string.CompareOrdinal(s, at, "true", 0, 4) == 0) { at += 4; return true; }
            if (s.Length - at >= 5 && string.CompareOrdinal(s, at, "false", 0, 5) == 0) { at += 5; return false; }
            if (s.Length - at >= 4 && string.CompareOrdinal(s, at, "null", 0, 4) == 0) { at += 4; return null; }
            int start = at;
            while (at < s.Length && "+-0123456789.eE".IndexOf(s[at]) >= 0) at++;
            double d;
            if (at > start && double.TryParse(s.Substring(start, at - start), NumberStyles.Float, CultureInfo.InvariantCulture, out d)) return d;
            throw new FormatException("JSON: unexpected character at offset " + start);
        }

        static string Str(string s, ref int at)
        {
            var sb = new StringBuilder();
            at++;
            while (at < s.Length)
            {
                char c = s[at++];
                if (c == '"') return sb.ToString();
                if (c != '\\') { sb.Append(c); continue; }
                if (at >= s.Length) break;
                char e = s[at++];
                switch (e)
                {
                    case 'n': sb.Append('\n'); break;
                    case 't': sb.Append('\t'); break;
                    case 'r': sb.Append('\r'); break;
                    case 'b': sb.Append('\b'); break;
                    case 'f': sb.Append('\f'); break;
                    case 'u':
                        if (at + 4 > s.Length) throw new FormatException("JSON: short \\u escape at offset " + at);
                        sb.Append((char)int.Parse(s.Substring(at, 4), NumberStyles.HexNumber, CultureInfo.InvariantCulture));
                        at += 4;
                        break;
                    default: sb.Append(e); break;
                }
            }
            throw new FormatException("JSON: unterminated string");
        }

        static void Write(StringBuilder sb, object v)
        {
            if (v == null) { sb.Append("null"); return; }
            if (v is bool) { sb.Append((bool)v ? "true" : "false"); return; }
            if (v is string) { Quote(sb, (string)v); return; }
            if (v is double || v is float || v is int || v is long || v is uint || v is ulong || v is short || v is decimal)
            {
                sb.Append(Convert.ToString(v, CultureInfo.InvariantCulture)); return;
            }
            var dict = v as IDictionary<string, object>;
            if (dict != null)
            {
                sb.Append('{');
                bool first = true;
                foreach (var kv in dict) { if (!first) sb.Append(','); first = false; Quote(sb, kv.Key); sb.Append(':'); Write(sb, kv.Value); }
                sb.Append('}');
                return;
            }
            var list = v as System.Collections.IEnumerable;
            if (list != null)
            {
                sb.Append('[');
                bool first = true;
                foreach (var item in list) { if (!first) sb.Append(','); first = false; Write(sb, item); }
                sb.Append(']');
                return;
            }
            Quote(sb, v.ToString());
        }

        static void Quote(StringBuilder sb, string s)
        {
            sb.Append('"');
            foreach (char c in s)
            {
                switch (c)
                {
                    case '"': sb.Append("\\\""); break;
                    case '\\': sb.Append("\\\\"); break;
                    case '\n': sb.Append("\\n"); break;
                    case '\r': sb.Append("\\r"); break;
                    case '\t': sb.Append("\\t"); break;
                    default:
                        if (c < ' ') sb.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                        else sb.Append(c);
                        break;
                }
            }
            sb.Append('"');
        }
    }
}
