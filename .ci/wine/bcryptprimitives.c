/* Wine 8.0 (Debian bookworm) has no bcryptprimitives.dll, which Rust's
 * standard library imports on Windows for ProcessPrng (Rust 1.78+); Wine 9
 * has it. CI runs the Windows build under Debian's Wine, so this shim gives
 * it ProcessPrng on top of RtlGenRandom (advapi32's SystemFunction036),
 * which Wine 8 has. It is only ever next to the .exe in CI's temp directory,
 * never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
