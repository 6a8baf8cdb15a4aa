/* placeholder */
typedef int nanolet_placeholder_t;
