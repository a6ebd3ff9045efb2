// SPDX-License-Identifier: MIT
/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) for headers and log records, and the
 * 16-bit check of metadata words. Table-driven, eight bytes per step (slicing-by-8).
 */
#include <pthread.h>
#include <string.h>

#include "persist/internal.h"

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

uint32_t sefer__pcrc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&table_once, table_init);
	crc = ~crc;
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		v ^= crc;
		crc = table[7][v & 0xff] ^ table[6][(v >> 8) & 0xff] ^ table[5][(v >> 16) & 0xff] ^
		      table[4][(v >> 24) & 0xff] ^ table[3][(v >> 32) & 0xff] ^
		      table[2][(v >> 40) & 0xff] ^ table[1][(v >> 48) & 0xff] ^ table[0][v >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

/* A 64-bit mixer (the finaliser of splitmix64). */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t check16(uint64_t salt, uint64_t off, uint64_t val)
{
	return mix(salt ^ mix(off + 0x9e3779b97f4a7c15ULL) ^ (val & PW_MASK)) >> 48;
}

uint64_t sefer__pword_make(uint64_t salt, uint64_t off, uint64_t val)
{
	return (val & PW_MASK) | check16(salt, off, val) << 48;
}

bool sefer__pword_ok(uint64_t salt, uint64_t off, uint64_t word)
{
	return word >> 48 == check16(salt, off, word);
}
