/* SPDX-License-Identifier: MIT */
/* A file for gcc to compile under sefer in the real-program test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
	struct node *left, *right;
	int key;
};

static struct node *insert(struct node *n, int key)
{
	if (!n) {
		n = calloc(1, sizeof(*n));
		n->key = key;
	} else if (key < n->key) {
		n->left = insert(n->left, key);
	} else {
		n->right = insert(n->right, key);
	}
	return n;
}

static int depth(const struct node *n)
{
	int l, r;

	if (!n)
		return 0;
	l = depth(n->left);
	r = depth(n->right);
	return 1 + (l > r ? l : r);
}

int main(void)
{
	struct node *root = NULL;

	for (int i = 0; i < 1000; i++)
		root = insert(root, (i * 7919) % 1000);
	printf("%d\n", depth(root));
	return 0;
}
