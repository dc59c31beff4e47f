// The demo's voxel world as a C# mod through Gabp.cs: the same tools, arguments and channels as `gabp mod`
// (world/get_block, world/place_block on the game's thread, player/teleport publishing player/move,
// demo/raise_error opening a blocking attention item, demo/echo, and demo/sleep answered from another thread). Written as a Unity behaviour (Start, Update,
// OnDestroy) and run here as a console program: Main calls Update about 60 times a second and wakes at once
// when a main-thread call arrives. Endpoint and token come from the GABS environment (GABP_SERVER_PORT,
// GABP_TOKEN) or bridge.json. Ends on Ctrl-C, SIGTERM, or (unless a launcher started it) the end of its stdin.
//
// Build: mcs -langversion:7.2 -out:VoxelMod.exe ../../bindings/csharp/Gabp.cs VoxelMod.cs
// Run:   LD_LIBRARY_PATH=<dir of libgabp.so> mono VoxelMod.exe
using System;
using System.Collections.Generic;
using System.Threading;
using Gabp;

public class VoxelBehaviour
{
    const int Size = 16;
    static readonly string[] BlockTypes = { "air", "stone", "dirt", "grass", "sand", "oak_log", "oak_planks", "glass", "torch" };
    const string Position = "\"x\":{\"type\":\"integer\",\"description\":\"East-west, an integer 0..=15.\"},"
        + "\"y\":{\"type\":\"integer\",\"description\":\"Height, an integer 0..=15.\"},"
        + "\"z\":{\"type\":\"integer\",\"description\":\"North-south, an integer 0..=15.\"}";

    readonly string[,,] world = new string[Size, Size, Size]; // null: air
    double px = 8.5, py = 5, pz = 8.5;
    ModServer mod;

    public string Endpoint { get { return mod.Endpoint; } }

    public void Start()
    {
        for (int x = 0; x < Size; x++)
            for (int z = 0; z < Size; z++)
                for (int y = 0; y < 5; y++)
                    world[x, y, z] = y <= 2 ? "stone" : y == 3 ? "dirt" : "grass";
        for (int y = 5; y < 8; y++) world[3, y, 3] = "oak_log";

        mod = new ModServer("GABP Voxel Demo (C#)", "0.1.0")
            .Tool("world/get_block", "The block at integer coordinates x, y, z (each 0..=15) of the 16x16x16 world; block is null for air.",
                GetBlock, "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{" + Position + "},\"required\":[\"x\",\"y\",\"z\"]}",
                ToolFlags.ReadOnly)
            .MainThreadTool("world/place_block", "Puts a block at integer coordinates x, y, z (each 0..=15); blockType air removes the block. Publishes world/block_change. Runs on the game thread.",
                PlaceBlock, "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{" + Position
                    + ",\"blockType\":{\"type\":\"string\",\"enum\":" + Json.Write(BlockTypes) + "}},\"required\":[\"x\",\"y\",\"z\",\"blockType\"]}")
            .MainThreadTool("player/teleport", "Moves a player to x, y, z (numbers 0..=16; playerId defaults to steve, the only player) and publishes player/move with the same payload. Runs on the game thread.",
                Teleport, "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"playerId\":{\"type\":\"string\"},"
                    + "\"x\":{\"type\":\"number\"},\"y\":{\"type\":\"number\"},\"z\":{\"type\":\"number\"}},\"required\":[\"x\",\"y\",\"z\"]}")
            .Tool("demo/raise_error", "Records message as a game error and opens an attention item (or adds to the open one), blocking unless blocking is false; answers the item's attentionId.",
                RaiseError, "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"message\":{\"type\":\"string\",\"minLength\":1},"
                    + "\"blocking\":{\"type\":\"boolean\",\"default\":true}},\"required\":[\"message\"]}")
            .Tool("demo/echo", "Returns value unchanged.", args => args,
                "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"value\":{}},\"required\":[\"value\"]}", ToolFlags.ReadOnly)
            .AsyncTool("demo/sleep", "Sleeps ms milliseconds (0..=60000) off the game's thread, reporting progress, then answers sleptMs; stops early when cancelled.",
                Sleep, "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":60000}},\"required\":[\"ms\"]}")
            .Channel("player/move")
            .Channel("world/block_change")
            .Attention();
        mod.Start();
    }

    /// <summary>Each frame: run the calls waiting for the game's thread.</summary>
    public void Update() { mod.Pump(); }

    public void OnDestroy() { mod.Dispose(); }

    /// <summary>Blocks until a main-thread call arrives or the frame is over.</summary>
    public void WaitForFrame(TimeSpan frame) { mod.Wait(frame); }

    public void Wake() { mod.Wake(); }

    static Dictionary<string, object> Args(string json) { return (Dictionary<string, object>)Json.Parse(json); }

    static int Coordinate(Dictionary<string, object> args, string axis)
    {
        double v = (double)args[axis];
        if (v < 0 || v > Size - 1 || v != Math.Floor(v))
            throw new GabpToolException(axis + " is " + v + ", outside the world: expected an integer from 0 to " + (Size - 1));
        return (int)v;
    }

    string GetBlock(string json)
    {
        var a = Args(json);
        int x = Coordinate(a, "x"), y = Coordinate(a, "y"), z = Coordinate(a, "z");
        return Json.Write(new Dictionary<string, object> { { "x", x }, { "y", y }, { "z", z }, { "block", world[x, y, z] } });
    }

    string PlaceBlock(string json)
    {
        var a = Args(json);
        int x = Coordinate(a, "x"), y = Coordinate(a, "y"), z = Coordinate(a, "z");
        var type = (string)a["blockType"];
        world[x, y, z] = type == "air" ? null : type;
        mod.Publish("world/block_change", Json.Write(new Dictionary<string, object> { { "x", x }, { "y", y }, { "z", z }, { "block", world[x, y, z] } }));
        return Json.Write(new Dictionary<string, object> { { "success", true }, { "blockPlaced", type } });
    }

    string Teleport(string json)
    {
        var a = Args(json);
        object id;
        if (a.TryGetValue("playerId", out id) && (string)id != "steve")
            throw new GabpToolException("no player " + id + ": the only player is steve");
        foreach (var axis in new[] { "x", "y", "z" })
        {
            double v = (double)a[axis];
            if (v < 0 || v > Size) throw new GabpToolException(axis + " is " + v + ", outside the world: expected a number from 0 to " + Size);
        }
        px = (double)a["x"]; py = (double)a["y"]; pz = (double)a["z"];
        var moved = Json.Write(new Dictionary<string, object> {
            { "playerId", "steve" },
            { "position", new Dictionary<string, object> { { "x", px }, { "y", py }, { "z", pz } } } });
        mod.Publish("player/move", moved);
        return moved;
    }

    static void Sleep(ToolCall call)
    {
        int ms = (int)(double)Args(call.Arguments)["ms"];
        new Thread(() =>
        {
            int slept = 0;
            while (slept < ms && !call.IsCancelled)
            {
                int step = Math.Min(50, ms - slept);
                Thread.Sleep(step);
                slept += step;
                call.Progress(slept, ms);
            }
            call.Reply(Json.Write(new Dictionary<string, object> { { "sleptMs", slept } })); // false if cancelled meanwhile
        }) { IsBackground = true }.Start();
    }

    string RaiseError(string json)
    {
        var a = Args(json);
        object blocking;
        var id = mod.OpenAttention((string)a["message"], !a.TryGetValue("blocking", out blocking) || (bool)blocking);
        return Json.Write(new Dictionary<string, object> { { "attentionId", id } });
    }
}

static class Program
{
    static int Main()
    {
        var game = new VoxelBehaviour();
        game.Start();
        Console.WriteLine("listening on " + game.Endpoint);
        Console.Out.Flush();
        var stop = false;
        Console.CancelKeyPress += (sender, e) => { e.Cancel = true; stop = true; game.Wake(); };
        // Started by a launcher (GABS, gabp mcp: GABS_GAME_ID is set), it runs until the launcher stops it; by hand,
        // also until the end of its stdin.
        if (Environment.GetEnvironmentVariable("GABS_GAME_ID") == null)
            new Thread(() => { while (Console.In.Read() >= 0) { } stop = true; game.Wake(); }) { IsBackground = true }.Start();
        while (!stop)
        {
            game.WaitForFrame(TimeSpan.FromMilliseconds(16));
            game.Update();
        }
        game.OnDestroy();
        return 0;
    }
}
