/* The rules at the boundary, from C: bad input is a status and a message, never a crash. */
#include <stdio.h>
#include <string.h>

#include "gabp.h"

static int failures = 0;

static void expect(const char *what, GabpStatus got, GabpStatus want, const char *needle) {
    size_t len = 0;
    const char *message = gabp_last_error(&len);
    if (got != want || (needle != NULL && strstr(message, needle) == NULL) || strlen(message) != len) {
        printf("FAIL %s: status %d (want %d), message \"%s\"\n", what, (int)got, (int)want, message);
        failures++;
    } else {
        printf("ok   %s\n", what);
    }
}

static void tool(void *user, uint64_t call, const char *args, size_t args_len) {
    (void)user;
    (void)args;
    (void)args_len;
    gabp_call_reply(call, "{}", 2);
}

int main(void) {
    if (gabp_abi_version() != GABP_ABI_VERSION) {
        printf("FAIL the library's ABI version %u is not the header's %d\n", gabp_abi_version(), GABP_ABI_VERSION);
        return 1;
    }
    uint64_t m = 0;
    expect("a NULL out pointer", gabp_mod_new("app", 3, "1.0", 3, NULL), GABP_STATUS_NULL, "out");
    expect("a name that is not UTF-8", gabp_mod_new("\xff", 1, "1.0", 3, &m), GABP_STATUS_UTF8, "UTF-8");
    expect("a NULL string with a length", gabp_mod_new(NULL, 5, "1.0", 3, &m), GABP_STATUS_NULL, "NULL");
    expect("a new mod", gabp_mod_new("c-app", 5, "1.0", 3, &m), GABP_STATUS_OK, NULL);
    expect("a schema that is not JSON", gabp_mod_add_tool(m, "a/b", 3, "", 0, "{", 1, 0, tool, NULL),
           GABP_STATUS_JSON, "input schema");
    expect("a NULL callback", gabp_mod_add_tool(m, "a/b", 3, "", 0, "", 0, 0, NULL, NULL), GABP_STATUS_NULL,
           "callback");
    expect("a reply to a call never made", gabp_call_reply(424242, "{}", 2), GABP_STATUS_HANDLE, "not a call");
    expect("a tick without time control", gabp_mod_tick(m, &(bool){false}), GABP_STATUS_STATE, "time control");
    GabpString endpoint = {NULL, 0};
    expect("the endpoint of a mod not started", gabp_mod_endpoint(m, &endpoint), GABP_STATUS_STATE, "not running");
    gabp_string_free(&endpoint);
    gabp_string_free(NULL);
    expect("free", gabp_mod_free(m), GABP_STATUS_OK, NULL);
    expect("a freed handle", gabp_mod_start(m), GABP_STATUS_HANDLE, "already freed");
    printf("%d failed\n", failures);
    return failures == 0 ? 0 : 1;
}
